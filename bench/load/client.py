#!/usr/bin/python3
"""Load client of the pods-api load benchmark (Debian python3-grpcio, C-core).

Raw-bytes gRPC calls (identity serializers, no generated code) over a UNIX
socket. Started by bench/load/run.ts; prints one JSON object on stdout.

  client.py unary --socket S --method /v1alpha1.Pods/ListPods [--mask a,b,c]
            [--uids FILE] --duration SEC --concurrency N
  client.py dump  --socket S --method M [--mask a,b,c] --out FILE [--uids-out FILE]
  client.py watch --socket S --watchers N --duration SEC --out FILE
"""

import argparse
import asyncio
import json
import os
import sys
import time

import grpc


def _identity(b):
    return b


CHANNEL_OPTIONS = [
    ("grpc.max_receive_message_length", -1),
    ("grpc.max_send_message_length", -1),
    # One HTTP/2 connection per channel; no proxy, no DNS.
    ("grpc.enable_http_proxy", 0),
]


def _varint(buf, pos):
    result = 0
    shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7


def _pod_uid(pod):
    """metadata (Pod field 1) -> uid (ObjectMeta field 5); empty when absent."""
    pos = 0
    end = len(pod)
    while pos < end:
        tag, pos = _varint(pod, pos)
        wt = tag & 7
        if wt == 2:
            n, pos = _varint(pod, pos)
            if tag >> 3 == 1:
                mpos = pos
                mend = pos + n
                while mpos < mend:
                    mtag, mpos = _varint(pod, mpos)
                    mwt = mtag & 7
                    if mwt == 2:
                        mn, mpos = _varint(pod, mpos)
                        if mtag >> 3 == 5:
                            return bytes(pod[mpos:mpos + mn]).decode()
                        mpos += mn
                    elif mwt == 0:
                        _, mpos = _varint(pod, mpos)
                    else:
                        return ""
                return ""
            pos += n
        elif wt == 0:
            _, pos = _varint(pod, pos)
        else:
            return ""
    return ""


def _split_list(body):
    """ListPodsResponse -> list of pod byte strings."""
    pods = []
    pos = 0
    mv = memoryview(body)
    while pos < len(body):
        tag, pos = _varint(body, pos)
        n, pos = _varint(body, pos)
        if tag == 0x0A:
            pods.append(mv[pos:pos + n])
        pos += n
    return pods


def _get_request(uid):
    raw = uid.encode()
    out = bytearray([0x0A])
    n = len(raw)
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out + raw)


def _metadata(mask):
    return (("x-kubernetes-fieldmask", mask),) if mask else None


def _pct(sorted_values, p):
    if not sorted_values:
        return None
    i = min(len(sorted_values) - 1, int(round(p / 100.0 * (len(sorted_values) - 1))))
    return sorted_values[i]


async def run_unary(args):
    requests = [b""]
    if args.uids:
        with open(args.uids) as f:
            requests = [_get_request(line.strip()) for line in f if line.strip()]
    metadata = _metadata(args.mask)
    latencies = []
    errors = {}
    received = 0
    async with grpc.aio.insecure_channel(f"unix:{args.socket}", options=CHANNEL_OPTIONS) as ch:
        call = ch.unary_unary(args.method, request_serializer=_identity,
                              response_deserializer=_identity)
        try:
            await call(requests[0], metadata=metadata)  # connect and warm up
        except grpc.aio.AioRpcError:
            pass
        deadline = time.perf_counter() + args.duration
        counter = [0]

        async def worker():
            nonlocal received
            while time.perf_counter() < deadline:
                req = requests[counter[0] % len(requests)]
                counter[0] += 1
                t0 = time.perf_counter_ns()
                try:
                    body = await call(req, metadata=metadata)
                    received += len(body)
                    latencies.append(time.perf_counter_ns() - t0)
                except grpc.aio.AioRpcError as e:
                    name = e.code().name
                    errors[name] = errors.get(name, 0) + 1

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(args.concurrency)))
        elapsed = time.perf_counter() - start
    latencies.sort()
    ms = [x / 1e6 for x in latencies]
    return {
        "ok": len(latencies),
        "errors": errors,
        "seconds": elapsed,
        "rps": len(latencies) / elapsed,
        "p50_ms": _pct(ms, 50),
        "p99_ms": _pct(ms, 99),
        "mean_bytes": received / len(latencies) if latencies else 0,
    }


async def run_dump(args):
    metadata = _metadata(args.mask)
    async with grpc.aio.insecure_channel(f"unix:{args.socket}", options=CHANNEL_OPTIONS) as ch:
        call = ch.unary_unary(args.method, request_serializer=_identity,
                              response_deserializer=_identity)
        body = await call(b"", metadata=metadata)
    with open(args.out, "wb") as f:
        f.write(body)
    pods = _split_list(body)
    if args.uids_out:
        with open(args.uids_out, "w") as f:
            for pod in pods:
                f.write(_pod_uid(pod) + "\n")
    return {"bytes": len(body), "pods": len(pods)}


async def run_watch(args):
    """N WatchPods streams on separate channels (connections), like N agents.

    Each watcher gets up to --sync-timeout for its initial list; live events
    are then read for --duration after the last watcher synced (or was
    dropped). Per live event one record "watcher uid type receipt_ns" goes to
    --out (receipt_ns is CLOCK_REALTIME, comparable with the daemon's timeline).
    """
    stats = {"initial_events": 0, "live_events": 0, "ended": {}, "sync_ms": [], "synced_at": 0,
             "initial_last": 0}
    start_ns = time.time_ns()
    all_synced = asyncio.Event()
    pending_sync = [args.watchers]
    streams = []
    stopping = [False]
    lines = []

    def synced_one():
        pending_sync[0] -= 1
        if pending_sync[0] == 0:
            all_synced.set()

    async def watcher(index):
        async with grpc.aio.insecure_channel(f"unix:{args.socket}",
                                             options=CHANNEL_OPTIONS) as ch:
            call = ch.unary_stream(args.method, request_serializer=_identity,
                                   response_deserializer=_identity)
            stream = call(b"")
            streams.append(stream)
            synced = False
            t0 = time.perf_counter()
            try:
                while True:
                    msg = await stream.read()
                    if msg is grpc.aio.EOF:
                        stats["ended"]["OK"] = stats["ended"].get("OK", 0) + 1
                        return
                    now = time.time_ns()
                    etype = msg[1] if len(msg) > 1 and msg[0] == 0x08 else 0
                    if not synced:
                        if etype == 4:
                            synced = True
                            stats["sync_ms"].append((time.perf_counter() - t0) * 1000)
                            stats["synced_at"] = max(stats["synced_at"], now)
                            synced_one()
                        else:
                            stats["initial_events"] += 1
                            stats["initial_last"] = now
                        continue
                    stats["live_events"] += 1
                    # WatchPodsEvent: type (2 bytes) then field 2 = pod.
                    pos = 2 if etype else 0
                    pos += 1
                    _, pos = _varint(msg, pos)
                    uid = _pod_uid(memoryview(msg)[pos:])
                    lines.append(f"{index} {uid} {etype} {now}\n")
            except asyncio.CancelledError:
                if not stopping[0]:
                    raise
            except grpc.aio.AioRpcError as e:
                if not (stopping[0] and e.code() == grpc.StatusCode.CANCELLED):
                    name = e.code().name
                    stats["ended"][name] = stats["ended"].get(name, 0) + 1
            finally:
                if not synced:
                    synced_one()

    async def supervisor():
        try:
            await asyncio.wait_for(all_synced.wait(), args.sync_timeout)
        except asyncio.TimeoutError:
            pass
        await asyncio.sleep(args.duration)
        stopping[0] = True
        for stream in streams:
            stream.cancel()

    tasks = [asyncio.ensure_future(watcher(i)) for i in range(args.watchers)]
    await supervisor()
    # Cancelled streams end at once; never wait long for a flooded channel.
    await asyncio.wait(tasks, timeout=5)
    with open(args.out, "w") as out:
        out.writelines(lines)
    sync = sorted(stats["sync_ms"])
    return {
        "initial_events": stats["initial_events"],
        "live_events": stats["live_events"],
        "ended": stats["ended"],
        "synced": len(sync),
        "sync_last_ms": sync[-1] if sync else None,
        "start_ns": start_ns,
        "synced_at_ns": stats["synced_at"],
        "initial_last_ns": stats["initial_last"],
        "end_ns": time.time_ns(),
    }


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["unary", "dump", "watch"])
    p.add_argument("--socket", required=True)
    p.add_argument("--method", default="/v1alpha1.Pods/ListPods")
    p.add_argument("--mask", default="")
    p.add_argument("--uids", default="")
    p.add_argument("--uids-out", default="")
    p.add_argument("--out", default="")
    p.add_argument("--duration", type=float, default=5.0)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--watchers", type=int, default=100)
    p.add_argument("--sync-timeout", type=float, default=60.0)
    args = p.parse_args()
    if args.mode == "watch" and args.method.endswith("ListPods"):
        args.method = "/v1alpha1.Pods/WatchPods"
    run = {"unary": run_unary, "dump": run_dump, "watch": run_watch}[args.mode]
    result = asyncio.run(run(args)) if args.mode != "watch" else _run_watch_and_exit(args)
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")


def _run_watch_and_exit(args):
    """Runs the watch, prints its result and leaves without closing channels
    (closing a channel that is still being flooded can block)."""
    loop = asyncio.new_event_loop()
    result = loop.run_until_complete(run_watch(args))
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
