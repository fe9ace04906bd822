"""A PodQuery client in Python grpcio, its messages built from descriptors
Debian's protoc compiles from proto/ (no code of ours).
Usage: _pod_query_grpcio.py DESCRIPTOR_SET SOCKET CONTAINER_ID. Prints one
JSON object per step; waits for a line on stdin where the test must change
the node."""
import json
import sys

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

NAMES = ["k8s.io.api.core.v1.Pod", "podsapi.v1.ListRequest", "podsapi.v1.ListResponse",
         "podsapi.v1.GetRequest", "podsapi.v1.GetResponse", "podsapi.v1.WatchRequest",
         "podsapi.v1.WatchEvent", "podsapi.v1.Selector", "podsapi.v1.NamespacedName"]


def classes(path):
    fds = descriptor_pb2.FileDescriptorSet()
    with open(path, "rb") as f:
        fds.ParseFromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    for fd in fds.file:
        pool.Add(fd)
    factory = message_factory.MessageFactory(pool)
    return {n.split(".")[-1]: factory.GetPrototype(pool.FindMessageTypeByName(n)) for n in NAMES}


M = classes(sys.argv[1])
SOCKET = "unix:" + sys.argv[2]
CONTAINER = sys.argv[3]


def say(obj):
    print(json.dumps(obj), flush=True)


def wait():
    return sys.stdin.readline().strip()


class Query:
    def __init__(self):
        # A channel of its own: its own connection, its own token bucket.
        self.chan = grpc.insecure_channel(SOCKET, options=[("grpc.use_local_subchannel_pool", 1)])
        grpc.channel_ready_future(self.chan).result(timeout=10)
        self.list = self.chan.unary_unary("/podsapi.v1.PodQuery/List",
                                          request_serializer=M["ListRequest"].SerializeToString,
                                          response_deserializer=M["ListResponse"].FromString)
        self.get = self.chan.unary_unary("/podsapi.v1.PodQuery/Get",
                                         request_serializer=M["GetRequest"].SerializeToString,
                                         response_deserializer=M["GetResponse"].FromString)
        self.watch = self.chan.unary_stream("/podsapi.v1.PodQuery/Watch",
                                            request_serializer=M["WatchRequest"].SerializeToString,
                                            response_deserializer=M["WatchEvent"].FromString)


def names(resp):
    return sorted(M["Pod"].FromString(b).metadata.name for b in resp.pods)


def name_of(resp):
    return M["Pod"].FromString(resp.pod).metadata.name


def code(fn):
    try:
        fn()
        return ["OK", ""]
    except grpc.RpcError as e:
        return [e.code().name, e.details()]


def main():
    q = Query()
    sel = M["Selector"]
    r = {"step": "query"}
    r["all"] = names(q.list(M["ListRequest"](), timeout=10))
    r["labelled"] = names(q.list(M["ListRequest"](selector=sel(namespace="shop", label_selector="app in (web,api)")), timeout=10))
    r["fields"] = names(q.list(M["ListRequest"](selector=sel(field_selector="status.phase!=Running")), timeout=10))
    masked = q.list(M["ListRequest"](selector=sel(label_selector="app=web"), mask={"paths": ["status.phase"]}), timeout=10)
    pod = M["Pod"].FromString(masked.pods[0])
    r["masked_status"] = sorted(f.name for f, _ in pod.status.ListFields())
    r["masked_has_spec"] = pod.HasField("spec")
    G = M["GetRequest"]
    r["by_name"] = name_of(q.get(G(name=M["NamespacedName"](namespace="shop", name="api-7")), timeout=10))
    r["by_container"] = name_of(q.get(G(container_id="containerd://" + CONTAINER), timeout=10))
    r["by_prefix"] = name_of(q.get(G(container_id=CONTAINER[:12]), timeout=10))
    r["by_ip"] = name_of(q.get(G(pod_ip="fd00:0:0:0::b"), timeout=10))
    r["host_ip"] = code(lambda: q.get(G(pod_ip="10.0.0.10"), timeout=10))
    r["short_prefix"] = code(lambda: q.get(G(container_id=CONTAINER[:8]), timeout=10))
    r["bad_selector"] = code(lambda: q.list(M["ListRequest"](selector=sel(label_selector="app in (web")), timeout=10))
    r["bad_field"] = code(lambda: q.list(M["ListRequest"](selector=sel(field_selector="spec.priority=1")), timeout=10))
    r["missing"] = code(lambda: q.get(G(uid="no-such-uid"), timeout=10))
    call = q.watch(M["WatchRequest"](selector=sel(namespace="shop")), timeout=30)
    initial = []
    for ev in call:
        initial.append(ev.type)
        if ev.type == 4:
            r["token"] = ev.resume_token
            break
    call.cancel()
    r["initial"] = initial
    say(r)
    wait()  # the test makes api-7 run and deletes web-1 while nobody watches

    q2 = Query()
    call = q2.watch(M["WatchRequest"](selector=sel(namespace="shop"), resume_token=r["token"], bookmark_seconds=1), timeout=30)
    events = []
    for ev in call:
        if ev.type == 5:
            events.append([5, ev.resume_token != ""])
            break
        events.append([ev.type, M["Pod"].FromString(ev.pod).metadata.name])
    call.cancel()
    res = {"step": "resumed", "events": events}
    res["gone"] = code(lambda: q2.get(G(container_id=CONTAINER), timeout=10))
    tomb = q2.get(G(container_id=CONTAINER, include_deleted=True), timeout=10)
    res["tombstone"] = [name_of(tomb), tomb.deleted,
                        M["Pod"].FromString(tomb.pod).metadata.HasField("deletionTimestamp")]
    say(res)

    noisy = Query()
    outcomes = [code(lambda: noisy.list(M["ListRequest"](), timeout=10))[0] for _ in range(20)]
    quiet = Query()
    say({"step": "fair", "noisy": outcomes,
         "quiet": code(lambda: quiet.list(M["ListRequest"](), timeout=10))[0]})
    wait()  # the test makes more changes than --watch-history keeps

    old = q2.watch(M["WatchRequest"](resume_token=r["token"]), timeout=30)
    say({"step": "expired", "result": code(lambda: next(iter(old)))})


main()
