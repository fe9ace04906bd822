"""The python3-grpcio (C-core) twin of tests/grpc/go/peerserver: the same
methods on a unix socket, bytes in and out through a generic handler.

    /usr/bin/python3 tests/grpc/_grpcio_peer_server.py SOCKET [GRACE_SECONDS]

Prints "ready" once serving; on SIGTERM prints "stopping", stops gracefully
(calls in flight get GRACE_SECONDS, then are cancelled), prints "stopped" and
exits 0.
"""

import os
import signal
import sys
import threading
from concurrent import futures

import grpc

stopping = threading.Event()


def echo(request, context):
    return request


def count(request, context):
    try:
        n = int(request.decode())
    except ValueError as err:
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(err))
    for i in range(n):
        yield f"#{i}".encode()


def fail(request, context):
    context.abort(grpc.StatusCode.NOT_FOUND, request.decode())


def hold(request, context):
    yield b"#0"
    while not stopping.wait(0.01):
        if not context.is_active():
            return
    yield b"bye"


def hold_forever(request, context):
    yield b"#0"
    # Polls rather than waiting on a callback: one that never fires would
    # leave a worker thread behind.
    while context.is_active():
        stopping.wait(0.01)


def main():
    socket = sys.argv[1]
    grace = float(sys.argv[2]) if len(sys.argv) > 2 else 0.5
    if os.path.exists(socket):
        os.unlink(socket)
    handlers = {
        "Echo": grpc.unary_unary_rpc_method_handler(echo),
        "Count": grpc.unary_stream_rpc_method_handler(count),
        "Fail": grpc.unary_unary_rpc_method_handler(fail),
        "Hold": grpc.unary_stream_rpc_method_handler(hold),
        "HoldForever": grpc.unary_stream_rpc_method_handler(hold_forever),
    }
    # SIGTERM is blocked before C-core starts its threads (they inherit the
    # mask) and taken with sigwait below: a handler would run only when the
    # main thread wakes, and a signal the kernel hands to one of C-core's
    # threads does not wake it, so the stop waited for the test's kill.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=32))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("t.T", handlers),))
    server.add_insecure_port(f"unix:{socket}")
    server.start()
    print("ready", flush=True)
    signal.sigwait({signal.SIGTERM})
    print("stopping", flush=True)
    stopping.set()
    # C-core cancels what is left after the grace period; under load its
    # shutdown has been seen to stall, and a stopping server process exits.
    server.stop(grace).wait(grace + 5)
    print("stopped", flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
