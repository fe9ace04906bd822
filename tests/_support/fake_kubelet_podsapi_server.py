"""A fake kubelet Pods API (v1alpha1.Pods, KEP-4188) in Python grpcio, run as
its own process. Every message it sends is built and serialized by Python
protobuf from the descriptors protoc compiles from proto/pods_api.proto and
proto/k8s.io/api/core/v1/generated.proto at test time: no code of ours
encodes what it sends (fake_kubelet_podsapi.ts drives it).

Usage: fake_kubelet_podsapi_server.py DESCRIPTOR_SET SOCKET [--initializing] [--unknown-status]

As the kubelet serves it:
- every RPC answers FAILED_PRECONDITION "Kubelet is initializing" until ready;
- WatchPods sends one ADDED per pod sorted by UID, INITIAL_SYNC_COMPLETE,
  then live events; a DELETED carries only name, namespace and UID;
- it removes whatever file is at its path and binds its own.

Reads one JSON command per line on stdin and answers one line
{"ok": true, "watchers": N, "watches": M} (M: watches ever started):
  {"op": "set", "pods": [...]}         the pods now (JSON v1.Pods); watchers get
                                       ADDED, MODIFIED (bytes changed), DELETED
  {"op": "ready", "value": bool}       initializing or not
  {"op": "unknownStatus", "value": b}  while true, pods carry the status the kubelet
                                       gives before it knows one (Pending, Ready False);
                                       turning it off sends MODIFIED for each pod
  {"op": "drop"}                       every watch ends RESOURCE_EXHAUSTED
  {"op": "close"}                      every watch ends OK
  {"op": "raw", "type": N, "pod": {}}  one event as given, to every watcher
  {"op": "stats"}                      only the answer
Prints {"ok": true, "listening": SOCKET} once serving; exits when stdin closes.
"""
import collections
import json
import os
import sys
import threading
import time
from concurrent import futures

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from k8s_json_proto import pod_message


def load(path):
    files = descriptor_pb2.FileDescriptorSet()
    with open(path, "rb") as f:
        files.ParseFromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    for file in files.file:
        pool.Add(file)
    factory = message_factory.MessageFactory(pool)
    return lambda name: factory.GetPrototype(pool.FindMessageTypeByName(name))


MESSAGE = load(sys.argv[1])
SOCKET = sys.argv[2]
Pod = MESSAGE("k8s.io.api.core.v1.Pod")
WatchPodsRequest = MESSAGE("v1alpha1.WatchPodsRequest")
WatchPodsEvent = MESSAGE("v1alpha1.WatchPodsEvent")
ListPodsRequest = MESSAGE("v1alpha1.ListPodsRequest")
ListPodsResponse = MESSAGE("v1alpha1.ListPodsResponse")
GetPodRequest = MESSAGE("v1alpha1.GetPodRequest")
GetPodResponse = MESSAGE("v1alpha1.GetPodResponse")
EVENT = {v.name: v.number for v in WatchPodsEvent.DESCRIPTOR.fields_by_name["type"].enum_type.values}

lock = threading.Lock()
changed = threading.Condition(lock)
state = {
    "ready": "--initializing" not in sys.argv[3:],
    "unknownStatus": "--unknown-status" in sys.argv[3:],
    "watches": 0,
}
pods = {}
watchers = set()


class Watcher:
    def __init__(self):
        self.queue = collections.deque()
        self.end = None  # "ok", or a (code, message) to abort with
        self.cancelled = False


def served(pod):
    if not state["unknownStatus"]:
        return pod
    return {**pod, "status": {"phase": "Pending",
                              "conditions": [{"type": "Ready", "status": "False"}]}}


def encode(pod):
    return pod_message(Pod, pod).SerializeToString(deterministic=True)


def broadcast(kind, pod_bytes):
    for watcher in watchers:
        watcher.queue.append((kind, pod_bytes))
    changed.notify_all()


def check_ready(context):
    if not state["ready"]:
        context.abort(grpc.StatusCode.FAILED_PRECONDITION, "Kubelet is initializing")


def watch_pods(request, context):
    watcher = Watcher()
    with lock:
        check_ready(context)
        for uid in sorted(pods):
            watcher.queue.append((EVENT["ADDED"], encode(served(pods[uid]))))
        watcher.queue.append((EVENT["INITIAL_SYNC_COMPLETE"], None))
        watchers.add(watcher)
        state["watches"] += 1

    def cancelled():
        with lock:
            watcher.cancelled = True
            watchers.discard(watcher)
            changed.notify_all()

    context.add_callback(cancelled)
    try:
        while True:
            with lock:
                while not watcher.queue and watcher.end is None and not watcher.cancelled:
                    changed.wait()
                if watcher.cancelled or watcher.end == "ok":
                    return
                end = watcher.end
                item = None if end is not None else watcher.queue.popleft()
            if end is not None:
                context.abort(*end)
            kind, pod_bytes = item
            event = WatchPodsEvent(type=kind)
            if pod_bytes is not None:
                event.pod = pod_bytes
            yield event
    finally:
        with lock:
            watchers.discard(watcher)


def list_pods(request, context):
    with lock:
        check_ready(context)
        return ListPodsResponse(pods=[encode(served(pods[uid])) for uid in sorted(pods)])


def get_pod(request, context):
    with lock:
        check_ready(context)
        pod = pods.get(request.podUID)
        if pod is None:
            context.abort(grpc.StatusCode.NOT_FOUND, f'pod with UID "{request.podUID}" not found')
        return GetPodResponse(pod=encode(served(pod)))


def set_pods(next_pods):
    seen = set()
    for pod in next_pods:
        uid = pod["metadata"]["uid"]
        seen.add(uid)
        before = pods.get(uid)
        pods[uid] = pod
        now = encode(served(pod))
        if before is None:
            broadcast(EVENT["ADDED"], now)
        elif encode(served(before)) != now:
            broadcast(EVENT["MODIFIED"], now)
    for uid in sorted(pods):
        if uid in seen:
            continue
        meta = pods.pop(uid)["metadata"]
        # The kubelet's DELETED carries only the pod's keys.
        keys = {"name": meta["name"], "namespace": meta["namespace"], "uid": uid}
        broadcast(EVENT["DELETED"], encode({"metadata": keys}))


def end_all(end):
    for watcher in watchers:
        watcher.end = end
    changed.notify_all()


def command(c):
    op = c["op"]
    if op == "set":
        set_pods(c["pods"])
    elif op == "ready":
        state["ready"] = c["value"]
    elif op == "unknownStatus":
        was = state["unknownStatus"]
        state["unknownStatus"] = c["value"]
        if was and not state["unknownStatus"]:
            for uid in sorted(pods):
                broadcast(EVENT["MODIFIED"], encode(pods[uid]))
    elif op == "drop":
        end_all((grpc.StatusCode.RESOURCE_EXHAUSTED, "watch client too slow, dropped"))
    elif op == "close":
        end_all("ok")
    elif op == "raw":
        broadcast(c["type"], encode(c["pod"]) if "pod" in c else None)
    elif op != "stats":
        raise ValueError(f'unknown op "{op}"')


def bind(server):
    # Like the kubelet: remove whatever is at the path and bind, again when a
    # server made the path anew in between. Not in the millisecond the removed
    # socket was made: its freed inode may become ours, and the same inode
    # born in the same millisecond is, to the daemon, its own socket.
    for attempt in range(50):
        try:
            os.unlink(SOCKET)
        except FileNotFoundError:
            pass
        time.sleep(0.002)
        try:
            if server.add_insecure_port("unix:" + SOCKET) != 0:
                return
        except RuntimeError:
            pass
    raise RuntimeError(f"cannot bind {SOCKET}")


def handlers():
    def unary(fn, request, response):
        return grpc.unary_unary_rpc_method_handler(
            fn, request_deserializer=request.FromString,
            response_serializer=response.SerializeToString)
    return grpc.method_handlers_generic_handler("v1alpha1.Pods", {
        "WatchPods": grpc.unary_stream_rpc_method_handler(
            watch_pods, request_deserializer=WatchPodsRequest.FromString,
            response_serializer=WatchPodsEvent.SerializeToString),
        "ListPods": unary(list_pods, ListPodsRequest, ListPodsResponse),
        "GetPod": unary(get_pod, GetPodRequest, GetPodResponse),
    })


def main():
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=32))
    server.add_generic_rpc_handlers([handlers()])
    bind(server)
    server.start()
    print(json.dumps({"ok": True, "listening": SOCKET}), flush=True)
    for line in sys.stdin:
        if line.strip() == "":
            continue
        try:
            with lock:
                command(json.loads(line))
                answer = {"ok": True, "watchers": len(watchers), "watches": state["watches"]}
        except Exception as error:  # the driver shows it as the fake's refusal
            answer = {"ok": False, "error": f"{type(error).__name__}: {error}"}
        print(json.dumps(answer), flush=True)
    server.stop(0).wait()


main()
