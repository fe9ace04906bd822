#!/usr/bin/python3
"""Connection cycles of a Python grpcio (C-core) client against the Pods API.

Raw-bytes calls (identity serializers, no generated code). Each cycle opens a
fresh channel (local subchannel pool, so a fresh connection), calls ListPods
and GetPod on /v1alpha1.Pods and /Pods, GetPod of an unknown pod, reads a few
events of a watch then cancels it, runs a watch with a short deadline, and
closes in one of these orders:
  cancel    cancel an open watch, then close the channel (RST_STREAM then EOF)
  open      close the channel under an open watch
  graceful  close with nothing open

Usage: _grpcio_cycles.py --socket PATH [--cycles N] [--parallel P]
                         [--close mix|cancel|open|graceful] [--progress]
Prints one JSON summary line (and "progress N" lines with --progress).
"""

import argparse
import json
import sys
import threading
import time

import grpc

CLOSES = ["cancel", "open", "graceful"]
OPTIONS = [("grpc.use_local_subchannel_pool", 1), ("grpc.max_receive_message_length", -1),
           ("grpc.enable_http_proxy", 0)]


def _identity(b):
    return b


def _varint(b, i):
    v = 0
    s = 0
    while i < len(b):
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        if c < 0x80:
            return v, i
        s += 7
    return -1, i


def _field(b, num):
    if b is None:
        return None
    i = 0
    while i < len(b):
        tag, i = _varint(b, i)
        if tag < 0:
            return None
        if tag & 7 == 0:
            _, i = _varint(b, i)
        elif tag & 7 == 2:
            n, i = _varint(b, i)
            if tag >> 3 == num:
                return b[i:i + n]
            i += n
        else:
            return None
    return None


def _get_request(uid):
    raw = uid.encode() if isinstance(uid, str) else bytes(uid)
    return bytes([0x0A, len(raw)]) + raw


class Summary:
    def __init__(self):
        self.lock = threading.Lock()
        self.data = {"cycles": 0, "calls_ok": 0, "watch_events": 0, "statuses": {},
                     "closes": {}, "unexpected": [], "seconds": 0}

    def status(self, name):
        with self.lock:
            self.data["statuses"][name] = self.data["statuses"].get(name, 0) + 1
            if name == "OK":
                self.data["calls_ok"] += 1

    def unexpected(self, text):
        with self.lock:
            if len(self.data["unexpected"]) < 20:
                self.data["unexpected"].append(text)

    def events(self, n):
        with self.lock:
            self.data["watch_events"] += n


def unary(ch, s, path, body, want):
    call = ch.unary_unary(path, request_serializer=_identity, response_deserializer=_identity)
    try:
        value = call(body, timeout=10)
        name = "OK"
    except grpc.RpcError as e:
        value = None
        name = e.code().name
    s.status(name)
    if name not in want:
        s.unexpected("%s: %s" % (path, name))
    return value


def watch(ch, path, timeout=None):
    stream = ch.unary_stream(path, request_serializer=_identity, response_deserializer=_identity)
    return stream(b"", timeout=timeout)


def read(call, s, n):
    """Reads n events; returns the final status name if the stream ended first."""
    seen = 0
    try:
        for _ in call:
            seen += 1
            if seen >= n:
                s.events(seen)
                return None
    except grpc.RpcError as e:
        s.events(seen)
        return e.code().name
    s.events(seen)
    return "OK"


def cycle(path, s, order):
    ch = grpc.insecure_channel("unix:" + path, options=OPTIONS)
    try:
        for prefix in ("/v1alpha1.Pods", "/Pods"):
            body = unary(ch, s, prefix + "/ListPods", b"", ("OK",))
            uid = _field(_field(_field(body, 1), 1), 5)
            if uid:
                # The simulated node churns: the pod may be gone by now.
                unary(ch, s, prefix + "/GetPod", _get_request(uid), ("OK", "NOT_FOUND"))
            else:
                s.unexpected(prefix + "/ListPods: no pod")
        unary(ch, s, "/v1alpha1.Pods/GetPod", _get_request("00000000-0000-4000-8000-00000000dead"),
              ("NOT_FOUND",))

        call = watch(ch, "/v1alpha1.Pods/WatchPods")
        ended = read(call, s, 3)
        if ended is not None:
            s.unexpected("watch ended early: %s" % ended)
        call.cancel()
        code = call.code().name
        s.status(code)
        if code != "CANCELLED":
            s.unexpected("cancelled watch: %s" % code)

        call = watch(ch, "/Pods/WatchPods", timeout=0.03)
        ended = read(call, s, 1 << 30)
        s.status(ended)
        if ended != "DEADLINE_EXCEEDED":
            s.unexpected("deadline watch: %s" % ended)

        if order == "cancel":
            call = watch(ch, "/v1alpha1.Pods/WatchPods")
            read(call, s, 1)
            call.cancel()
        elif order == "open":
            call = watch(ch, "/v1alpha1.Pods/WatchPods")
            read(call, s, 1)
    finally:
        ch.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--socket", required=True)
    ap.add_argument("--cycles", type=int, default=100)
    ap.add_argument("--parallel", type=int, default=1)
    ap.add_argument("--close", default="mix")
    ap.add_argument("--progress", action="store_true")
    args = ap.parse_args()
    s = Summary()
    counter = [0]
    counter_lock = threading.Lock()
    start = time.monotonic()

    def worker():
        while True:
            with counter_lock:
                i = counter[0]
                if i >= args.cycles:
                    return
                counter[0] += 1
            order = CLOSES[i % len(CLOSES)] if args.close == "mix" else args.close
            try:
                cycle(args.socket, s, order)
            except Exception as e:  # noqa: BLE001 - reported, the run goes on
                s.unexpected("cycle %d: %r" % (i, e))
            with s.lock:
                s.data["cycles"] += 1
                s.data["closes"][order] = s.data["closes"].get(order, 0) + 1
                done = s.data["cycles"]
            if args.progress:
                print("progress %d" % done, flush=True)

    threads = [threading.Thread(target=worker) for _ in range(args.parallel)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    s.data["seconds"] = round(time.monotonic() - start, 3)
    print(json.dumps(s.data), flush=True)
    sys.exit(0)


if __name__ == "__main__":
    main()
