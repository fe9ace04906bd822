"""Holds many idle TCP connections to one address, as a hostile local process would.

Usage: _tcp_flood.py HOST PORT COUNT

Opens COUNT non-blocking connections (sending nothing), waits until each has
connected or failed (or 20 s have passed), prints one JSON line
{"connected": n, "failed": n, "pending": n}, then holds every socket open until
a line arrives on stdin, closes them all and prints {"closed": n}.

Its own descriptor limit is raised to fit COUNT (it runs as root in CI).
"""

import json
import resource
import select
import socket
import sys
import time


def main() -> None:
    host, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    need = count + 64
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, max(hard, need)))
    socks = []
    for _ in range(count):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.connect_ex((host, port))
        socks.append(s)
    poller = select.epoll()
    for s in socks:
        poller.register(s.fileno(), select.EPOLLOUT)
    by_fd = {s.fileno(): s for s in socks}
    connected = failed = 0
    deadline = time.monotonic() + 20
    waiting = set(by_fd)
    while waiting and time.monotonic() < deadline:
        for fd, _ in poller.poll(0.5):
            if fd not in waiting:
                continue
            waiting.discard(fd)
            poller.unregister(fd)
            if by_fd[fd].getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                connected += 1
            else:
                failed += 1
    print(json.dumps({"connected": connected, "failed": failed, "pending": len(waiting)}), flush=True)
    sys.stdin.readline()
    for s in socks:
        s.close()
    print(json.dumps({"closed": len(socks)}), flush=True)


main()
