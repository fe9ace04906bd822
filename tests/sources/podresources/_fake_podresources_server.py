"""A fake kubelet podresources server (v1.PodResourcesLister) in Python
grpcio, its messages built from the descriptors protoc compiles from
proto/k8s.io/kubelet/podresources/v1/api.proto at test time (no code of ours
encodes what it sends).

Usage: _fake_podresources_server.py DESCRIPTOR_SET SOCKET

Reads one JSON command per line on stdin and answers one JSON line:
  {"list": {...}}         the List answer from now on (proto3 JSON of ListPodResourcesResponse)
  {"allocatable": {...}}  the GetAllocatableResources answer (AllocatableResourcesResponse)
  {"refuse": N}           refuse the next N calls with RESOURCE_EXHAUSTED, as the kubelet's limiter
  {"calls": true}         how many calls each method got, refused ones included
Prints {"ready": true} once serving; exits when stdin closes.
"""
import json
import os
import sys
import threading
from concurrent import futures

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory

NAMES = ["ListPodResourcesRequest", "ListPodResourcesResponse", "AllocatableResourcesRequest",
         "AllocatableResourcesResponse", "GetPodResourcesRequest", "GetPodResourcesResponse"]


def classes(path):
    fds = descriptor_pb2.FileDescriptorSet()
    with open(path, "rb") as f:
        fds.ParseFromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    for fd in fds.file:
        pool.Add(fd)
    factory = message_factory.MessageFactory(pool)
    return {n: factory.GetPrototype(pool.FindMessageTypeByName("v1." + n)) for n in NAMES}


M = classes(sys.argv[1])
SOCKET = sys.argv[2]
lock = threading.Lock()
state = {
    "list": M["ListPodResourcesResponse"](),
    "allocatable": M["AllocatableResourcesResponse"](),
    "refuse": 0,
    "calls": {"List": 0, "GetAllocatableResources": 0, "Get": 0},
}


def admit(method, context):
    with lock:
        state["calls"][method] += 1
        if state["refuse"] > 0:
            state["refuse"] -= 1
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "rejected by rate limit")


def list_(request, context):
    admit("List", context)
    with lock:
        return state["list"]


def allocatable(request, context):
    admit("GetAllocatableResources", context)
    with lock:
        return state["allocatable"]


def get(request, context):
    admit("Get", context)
    with lock:
        for pod in state["list"].pod_resources:
            if pod.name == request.pod_name and pod.namespace == request.pod_namespace:
                return M["GetPodResourcesResponse"](pod_resources=pod)
    context.abort(grpc.StatusCode.NOT_FOUND,
                  f"pod {request.pod_namespace}/{request.pod_name} not found")


def handler(fn, req, resp):
    return grpc.unary_unary_rpc_method_handler(
        fn, request_deserializer=M[req].FromString, response_serializer=M[resp].SerializeToString)


def main():
    if os.path.exists(SOCKET):
        os.unlink(SOCKET)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler("v1.PodResourcesLister", {
        "List": handler(list_, "ListPodResourcesRequest", "ListPodResourcesResponse"),
        "GetAllocatableResources": handler(
            allocatable, "AllocatableResourcesRequest", "AllocatableResourcesResponse"),
        "Get": handler(get, "GetPodResourcesRequest", "GetPodResourcesResponse"),
    })])
    server.add_insecure_port("unix:" + SOCKET)
    server.start()
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        with lock:
            if "list" in command:
                state["list"] = json_format.ParseDict(command["list"],
                                                      M["ListPodResourcesResponse"]())
            if "allocatable" in command:
                state["allocatable"] = json_format.ParseDict(
                    command["allocatable"], M["AllocatableResourcesResponse"]())
            if "refuse" in command:
                state["refuse"] = command["refuse"]
            answer = {"calls": dict(state["calls"])} if "calls" in command else {"ok": True}
        print(json.dumps(answer), flush=True)
    server.stop(0).wait()


main()
