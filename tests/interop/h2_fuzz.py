#!/usr/bin/python3
"""A raw HTTP/2 fuzzer for the Pods API socket (Debian python3-h2 / python3-hpack).

Each connection sends the client preface and a SETTINGS frame, then a random
mix of valid gRPC requests and hostile frames: mutated frames (bad lengths,
types, flags, stream ids), unknown frame types, stream id games, CONTINUATION
floods, SETTINGS/PING/RST_STREAM floods, window overflows, HPACK garbage and
plain garbage. It reads whatever the server sends (and counts the GOAWAY
codes it sees), then closes in a random order: RST_STREAM then GOAWAY then
EOF, EOF in the middle of a frame, an abrupt close, a GOAWAY and wait, a
half close. At the end a fresh connection (python3-h2) must get a ListPods
answered with grpc-status 0.

Usage: h2_fuzz.py SOCKET [--frames N] [--seed S] [--parallel P] [--max-conn-frames M]
Prints one JSON summary; exits 0 when the final ListPods succeeds, 1 otherwise.
"""

import argparse
import errno
import json
import random
import select
import socket
import struct
import sys
import threading
import time

import h2.config
import h2.connection
import h2.events
import hpack

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, \
    CONTINUATION = range(10)
END_STREAM, ACK, END_HEADERS, PADDED, PRIORITY_FLAG = 0x1, 0x1, 0x4, 0x8, 0x20
METHODS = ["/v1alpha1.Pods/ListPods", "/v1alpha1.Pods/GetPod", "/v1alpha1.Pods/WatchPods",
           "/Pods/ListPods", "/Pods/GetPod", "/Pods/WatchPods", "/v1alpha1.Pods/Nope", "/"]
CLOSES = ["rst-goaway-eof", "eof-mid-frame", "abrupt", "goaway-wait", "half-close"]
CONN_TIMEOUT = 3.0


def frame(ftype, flags, sid, payload=b"", length=None):
    n = len(payload) if length is None else length
    return struct.pack(">I", n & 0xFFFFFF)[1:] + bytes([ftype & 0xFF, flags & 0xFF]) + \
        struct.pack(">I", sid & 0xFFFFFFFF) + payload


def grpc_message(body=b""):
    return b"\x00" + struct.pack(">I", len(body)) + body


def settings_payload(pairs):
    return b"".join(struct.pack(">HI", k & 0xFFFF, v & 0xFFFFFFFF) for k, v in pairs)


class Conn:
    """One fuzzing connection: its socket, HPACK encoder, stream ids and counters."""

    def __init__(self, path, rng, stats):
        self.rng = rng
        self.stats = stats
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(CONN_TIMEOUT)
        self.sock.connect(path)
        self.sock.setblocking(False)
        self.encoder = hpack.Encoder()
        self.next_id = 1
        self.open_ids = []
        self.dead = False
        self.deadline = time.monotonic() + CONN_TIMEOUT
        self.rbuf = bytearray()
        self.frames = 0

    # I/O ---------------------------------------------------------------
    def _read(self):
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    self.dead = True
                    return
                self.rbuf += chunk
                self._parse()
        except BlockingIOError:
            return
        except OSError:
            self.dead = True

    def _parse(self):
        while len(self.rbuf) >= 9:
            n = int.from_bytes(self.rbuf[0:3], "big")
            if len(self.rbuf) < 9 + n:
                if len(self.rbuf) > 1 << 20:
                    self.rbuf.clear()  # a large DATA frame: stop tracking, not an error
                return
            if self.rbuf[3] == GOAWAY and n >= 8:
                code = int.from_bytes(self.rbuf[13:17], "big")
                with self.stats["lock"]:
                    self.stats["goaway_codes"][str(code)] = \
                        self.stats["goaway_codes"].get(str(code), 0) + 1
            del self.rbuf[:9 + n]

    def send(self, data, count=1):
        """Writes `data` fully (reading meanwhile); counts `count` frames once written."""
        view = memoryview(data)
        while view and not self.dead:
            if time.monotonic() > self.deadline:
                self.dead = True
                break
            r, w, _ = select.select([self.sock], [self.sock], [], 0.2)
            if r:
                self._read()
            if w and not self.dead:
                try:
                    sent = self.sock.send(view)
                    view = view[sent:]
                except BlockingIOError:
                    pass
                except OSError:
                    self.dead = True
        if not view:
            self.frames += count
            with self.stats["lock"]:
                self.stats["frames"] += count
                self.stats["bytes"] += len(data)
            return True
        return False

    def drain(self, seconds):
        end = time.monotonic() + seconds
        while not self.dead and time.monotonic() < end:
            r, _, _ = select.select([self.sock], [], [], max(0.0, end - time.monotonic()))
            if r:
                self._read()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    # Building blocks ---------------------------------------------------
    def new_id(self):
        sid = self.next_id
        self.next_id += 2
        return sid

    def header_block(self, path=None, extra=()):
        headers = [(":method", "POST"), (":scheme", "http"),
                   (":path", path or self.rng.choice(METHODS)), (":authority", "localhost"),
                   ("content-type", "application/grpc"), ("te", "trailers")] + list(extra)
        return self.encoder.encode(headers)

    def valid_request(self):
        sid = self.new_id()
        path = self.rng.choice(METHODS)
        body = b""
        if path.endswith("GetPod") and self.rng.random() < 0.5:
            body = b"\x0a\x04nope"
        extra = [("grpc-timeout", "%dm" % self.rng.randint(1, 500))] if self.rng.random() < 0.3 else []
        ok = self.send(frame(HEADERS, END_HEADERS, sid, self.header_block(path, extra)) +
                       frame(DATA, END_STREAM, sid, grpc_message(body)), 2)
        if ok:
            self.open_ids.append(sid)
        return sid

    # Actions -----------------------------------------------------------
    def act(self):
        rng = self.rng
        roll = rng.random()
        if roll < 0.30:
            self.valid_request()
        elif roll < 0.36:
            sid = self.valid_request()  # rapid reset
            self.send(frame(RST_STREAM, 0, sid, struct.pack(">I", 8)))
        elif roll < 0.46:
            self.send(self.mutated())
        elif roll < 0.50:
            self.send(frame(rng.randint(10, 255), rng.randint(0, 255), rng.randint(0, 99),
                            rng.randbytes(rng.randint(0, 64))))
        elif roll < 0.57:
            self.send(self.id_game())
        elif roll < 0.61:
            self.continuation_flood()
        elif roll < 0.65:
            n = rng.randint(2, 200)
            pairs = [(rng.choice([1, 2, 3, 4, 5, 6, 8, 9, 0x7F, 0xFFFF]), rng.choice(
                [0, 1, 2, 100, 16383, 16384, 1 << 24, 2**31 - 1, 2**31, 2**32 - 1]))
                for _ in range(rng.randint(0, 3))]
            self.send(frame(SETTINGS, 0, 0, settings_payload(pairs)) * n, n)
        elif roll < 0.69:
            n = rng.randint(2, 500)
            self.send(frame(PING, 0, 0, rng.randbytes(8)) * n, n)
        elif roll < 0.73:
            n = rng.randint(2, 500)
            self.send(b"".join(frame(RST_STREAM, 0, rng.randint(0, self.next_id + 4) | 1,
                                     struct.pack(">I", rng.randint(0, 14))) for _ in range(n)), n)
        elif roll < 0.78:
            self.window_game()
        elif roll < 0.81:
            self.send(rng.randbytes(rng.randint(1, 300)))
        elif roll < 0.85:
            sid = self.new_id()
            junk = rng.randbytes(rng.randint(1, 200))
            if rng.random() < 0.5:
                junk = b"\x3f\xe1\xff\xff\x0f" + junk  # table size update far past the limit
            self.send(frame(HEADERS, END_HEADERS | END_STREAM, sid, junk))
        elif roll < 0.88:
            sid = self.new_id()
            big = [("x-big-%d" % i, "v" * rng.randint(100, 8000)) for i in range(rng.randint(1, 40))]
            block = self.header_block(None, big)
            self.send(frame(HEADERS, END_HEADERS | END_STREAM, sid, block[:16384]))
        elif roll < 0.91:
            n = rng.randint(20000, 70000)
            self.send(frame(DATA, 0, rng.choice([1, self.next_id - 2, self.next_id]),
                            length=n) + rng.randbytes(min(n, 16384)))
        elif roll < 0.94:
            sid = self.new_id()
            # Request body larger than any sane message limit, announced but not sent.
            self.send(frame(HEADERS, END_HEADERS, sid, self.header_block()) +
                      frame(DATA, 0, sid, b"\x00\x7f\xff\xff\xff" + rng.randbytes(100)), 2)
        elif roll < 0.96:
            self.send(frame(PUSH_PROMISE, END_HEADERS, 1, struct.pack(">I", 2) + b"\x82"))
        elif roll < 0.98:
            sid = self.new_id()
            # Compressed message flag (identity only is allowed).
            self.send(frame(HEADERS, END_HEADERS, sid, self.header_block(
                "/v1alpha1.Pods/ListPods", [("grpc-encoding", "gzip")])) +
                frame(DATA, END_STREAM, sid, b"\x01\x00\x00\x00\x03abc"), 2)
        else:
            self.send(frame(GOAWAY, 0, 0, struct.pack(">II", rng.randint(0, 99), rng.randint(0, 13))))

    def mutated(self):
        rng = self.rng
        sid = self.new_id()
        raw = bytearray(frame(HEADERS, END_HEADERS | END_STREAM, sid, self.header_block()))
        kind = rng.randint(0, 4)
        if kind == 0:
            raw[0:3] = rng.randint(0, 1 << 24).to_bytes(3, "big")  # bad length
        elif kind == 1:
            raw[3] = rng.randint(0, 255)  # type
        elif kind == 2:
            raw[4] = rng.randint(0, 255)  # flags (PADDED / PRIORITY with no room)
        elif kind == 3:
            raw[5:9] = rng.randint(0, 2**32 - 1).to_bytes(4, "big")  # stream id, R bit
        else:
            for _ in range(rng.randint(1, 6)):
                raw[rng.randrange(len(raw))] = rng.randint(0, 255)
        return bytes(raw)

    def id_game(self):
        rng = self.rng
        g = rng.randint(0, 7)
        if g == 0:
            return frame(HEADERS, END_HEADERS, rng.randint(1, 50) * 2, self.header_block())
        if g == 1:
            return frame(HEADERS, END_HEADERS, 0, self.header_block())
        if g == 2:
            return frame(HEADERS, END_HEADERS, max(1, self.next_id - 4) | 1, self.header_block())
        if g == 3:
            return frame(DATA, 0, self.next_id + 40, grpc_message())
        if g == 4:
            sid = self.new_id()
            return frame(PRIORITY, 0, sid, struct.pack(">IB", sid, 16))  # depends on itself
        if g == 5:
            return frame(WINDOW_UPDATE, 0, self.next_id + 100, struct.pack(">I", 1))
        if g == 6:
            return frame(SETTINGS, 0, rng.randint(1, 9), settings_payload([(4, 1)]))
        return frame(PING, 0, rng.randint(1, 9), rng.randbytes(rng.choice([7, 8, 9])))

    def continuation_flood(self):
        rng = self.rng
        sid = self.new_id()
        n = rng.randint(10, 2000)
        block = self.header_block()
        parts = [frame(HEADERS, 0, sid, block[:3])]
        filler = rng.choice([b"", b"\x00" * 16, rng.randbytes(64)])
        parts += [frame(CONTINUATION, 0, sid, filler)] * n
        if rng.random() < 0.5:
            parts.append(frame(CONTINUATION, END_HEADERS, sid, block[3:]))
        elif rng.random() < 0.5:
            parts.append(frame(DATA, 0, sid, b"interleaved"))  # not a CONTINUATION
        self.send(b"".join(parts), len(parts))

    def window_game(self):
        rng = self.rng
        sid = rng.choice([0, max(1, self.next_id - 2)])
        g = rng.randint(0, 3)
        if g == 0:
            n = rng.randint(2, 4)
            self.send(frame(WINDOW_UPDATE, 0, sid, struct.pack(">I", 2**31 - 1)) * n, n)
        elif g == 1:
            self.send(frame(WINDOW_UPDATE, 0, sid, struct.pack(">I", 0)))
        elif g == 2:
            self.send(frame(WINDOW_UPDATE, 0, sid, struct.pack(">I", 1), length=rng.choice([0, 3, 5])) +
                      b"\x00" * 5)
        else:
            self.send(frame(SETTINGS, 0, 0, settings_payload([(4, 2**31 - 1)])) +
                      frame(SETTINGS, 0, 0, settings_payload([(4, rng.choice([0, 2**31])) ])), 2)

    def finish(self, order):
        rng = self.rng
        try:
            if order == "rst-goaway-eof":
                if self.open_ids:
                    self.send(frame(RST_STREAM, 0, self.open_ids[-1], struct.pack(">I", 8)))
                self.send(frame(GOAWAY, 0, 0, struct.pack(">II", 0, 0)))
                self.sock.shutdown(socket.SHUT_WR)
            elif order == "eof-mid-frame":
                self.send(frame(DATA, 0, max(1, self.next_id - 2), length=1000)[:rng.randint(1, 9)] +
                          rng.randbytes(rng.randint(0, 40)), 0)
            elif order == "goaway-wait":
                self.send(frame(GOAWAY, 0, 0, struct.pack(">II", max(0, self.next_id - 2), 0)))
                self.drain(0.05)
            elif order == "half-close":
                self.sock.shutdown(socket.SHUT_WR)
                self.drain(0.05)
        except OSError:
            pass
        self.close()


def fuzz_connection(path, rng, stats, max_frames):
    try:
        c = Conn(path, rng, stats)
    except OSError as e:
        with stats["lock"]:
            stats["connect_errors"][errno.errorcode.get(e.errno, str(e.errno))] = \
                stats["connect_errors"].get(errno.errorcode.get(e.errno, str(e.errno)), 0) + 1
        time.sleep(0.01)
        return
    if rng.random() < 0.02:
        c.send(rng.choice([b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", PREFACE[:rng.randint(1, 23)] +
                           b"garbage", rng.randbytes(30)]), 0)
    else:
        c.send(PREFACE, 0)
        c.send(frame(SETTINGS, 0, 0, settings_payload([(2, 0), (4, rng.choice([0, 65535, 1 << 20]))])))
        if rng.random() < 0.5:
            c.send(frame(SETTINGS, ACK, 0))
    budget = rng.randint(1, max_frames)
    while not c.dead and c.frames < budget:
        c.act()
    order = rng.choice(CLOSES)
    c.finish(order)
    with stats["lock"]:
        stats["connections"] += 1
        stats["closes"][order] = stats["closes"].get(order, 0) + 1


def final_list(path, timeout=15.0):
    """A valid ListPods on a fresh connection: returns the grpc-status seen (None: none)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True,
                                                                header_encoding="utf-8"))
    conn.initiate_connection()
    sid = conn.get_next_available_stream_id()
    conn.send_headers(sid, [(":method", "POST"), (":scheme", "http"),
                            (":path", "/v1alpha1.Pods/ListPods"), (":authority", "localhost"),
                            ("content-type", "application/grpc"), ("te", "trailers")])
    conn.send_data(sid, grpc_message(), end_stream=True)
    s.sendall(conn.data_to_send())
    grpc_status = None
    body = 0
    end = time.monotonic() + timeout
    try:
        while time.monotonic() < end:
            data = s.recv(65536)
            if not data:
                break
            for ev in conn.receive_data(data):
                if isinstance(ev, h2.events.DataReceived):
                    body += len(ev.data)
                    conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                elif isinstance(ev, (h2.events.TrailersReceived, h2.events.ResponseReceived)):
                    for k, v in ev.headers:
                        if k == "grpc-status":
                            grpc_status = v
                elif isinstance(ev, h2.events.StreamEnded):
                    s.close()
                    return grpc_status, body
            s.sendall(conn.data_to_send())
    except OSError:
        pass
    s.close()
    return grpc_status, body


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("socket")
    ap.add_argument("--frames", type=int, default=20000, help="frame budget (all connections)")
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--parallel", type=int, default=4, help="connections at once")
    ap.add_argument("--max-conn-frames", type=int, default=300)
    args = ap.parse_args()
    stats = {"lock": threading.Lock(), "frames": 0, "bytes": 0, "connections": 0, "closes": {},
             "goaway_codes": {}, "connect_errors": {}}
    start = time.monotonic()

    def worker(i):
        rng = random.Random(args.seed * 1000 + i)
        while True:
            with stats["lock"]:
                if stats["frames"] >= args.frames:
                    return
                if sum(stats["connect_errors"].values()) > 200:
                    return  # the socket stopped accepting: the final check says why
            fuzz_connection(args.socket, rng, stats, args.max_conn_frames)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(args.parallel)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        status, body = final_list(args.socket)
    except OSError as e:
        status, body = None, 0
        stats["final_error"] = str(e)
    del stats["lock"]
    stats["seconds"] = round(time.monotonic() - start, 3)
    stats["seed"] = args.seed
    stats["final_grpc_status"] = status
    stats["final_body_bytes"] = body
    print(json.dumps(stats, sort_keys=True))
    sys.exit(0 if status == "0" else 1)


if __name__ == "__main__":
    main()
