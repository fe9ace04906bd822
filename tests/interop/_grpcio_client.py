"""An independent Pods API client: Python grpcio with message classes built
from descriptors that Debian's protoc compiles from proto/ (no code of ours).
Usage: _grpcio_client.py DESCRIPTOR_SET SOCKET. Prints one JSON report."""
import json
import sys

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory


def classes(descriptor_set_path):
    fds = descriptor_pb2.FileDescriptorSet()
    with open(descriptor_set_path, "rb") as f:
        fds.ParseFromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    for fd in fds.file:
        pool.Add(fd)
    names = ["k8s.io.api.core.v1.Pod", "v1alpha1.ListPodsRequest", "v1alpha1.ListPodsResponse",
             "v1alpha1.GetPodRequest", "v1alpha1.GetPodResponse", "v1alpha1.WatchPodsRequest",
             "v1alpha1.WatchPodsEvent", "PodListRequest", "PodListResponse", "PodGetRequest",
             "PodGetResponse", "PodWatchRequest", "PodWatchResponse"]
    factory = message_factory.MessageFactory(pool)
    return {n: factory.GetPrototype(pool.FindMessageTypeByName(n)) for n in names}


def main():
    m = classes(sys.argv[1])
    chan = grpc.insecure_channel("unix:" + sys.argv[2])
    grpc.channel_ready_future(chan).result(timeout=10)

    def unary(path, req_cls, resp_cls):
        return chan.unary_unary(path, request_serializer=req_cls.SerializeToString,
                                response_deserializer=resp_cls.FromString)

    report = {}
    Pod = m["k8s.io.api.core.v1.Pod"]
    alpha = unary("/v1alpha1.Pods/ListPods", m["v1alpha1.ListPodsRequest"], m["v1alpha1.ListPodsResponse"])
    pods = [Pod.FromString(b) for b in alpha(m["v1alpha1.ListPodsRequest"](), timeout=10).pods]
    report["v1alpha1_uids"] = [p.metadata.uid for p in pods]
    report["containers"] = sum(len(p.spec.containers) for p in pods)
    report["phases"] = sorted({p.status.phase for p in pods})
    legacy = unary("/Pods/ListPods", m["PodListRequest"], m["PodListResponse"])
    report["v1_uids"] = [p.metadata.uid for p in legacy(m["PodListRequest"](), timeout=10).pods]
    first = report["v1alpha1_uids"][0]
    get = unary("/v1alpha1.Pods/GetPod", m["v1alpha1.GetPodRequest"], m["v1alpha1.GetPodResponse"])
    report["get_name"] = Pod.FromString(get(m["v1alpha1.GetPodRequest"](podUID=first), timeout=10).pod).metadata.name
    get_v1 = unary("/Pods/GetPod", m["PodGetRequest"], m["PodGetResponse"])
    report["get_v1_name"] = get_v1(m["PodGetRequest"](podUID=first), timeout=10).pod.metadata.name
    masked = alpha(m["v1alpha1.ListPodsRequest"](), timeout=10,
                   metadata=[("x-kubernetes-fieldmask", "status.phase")])
    mp = Pod.FromString(masked.pods[0])
    report["masked_fields"] = sorted(f.name for f, _ in mp.ListFields())
    report["masked_status_fields"] = sorted(f.name for f, _ in mp.status.ListFields())
    try:
        get(m["v1alpha1.GetPodRequest"](podUID="00000000-0000-4000-8000-00000000dead"), timeout=10)
        report["not_found"] = "OK"
    except grpc.RpcError as e:
        report["not_found"] = e.code().name
        report["not_found_details"] = e.details()
    watch = chan.unary_stream("/v1alpha1.Pods/WatchPods",
                              request_serializer=m["v1alpha1.WatchPodsRequest"].SerializeToString,
                              response_deserializer=m["v1alpha1.WatchPodsEvent"].FromString)
    call = watch(m["v1alpha1.WatchPodsRequest"](), timeout=30)
    types = []
    for event in call:
        types.append(event.type)
        if event.type == 4:
            break
        Pod.FromString(event.pod)
    call.cancel()
    report["watch_types"] = types
    print(json.dumps(report))


if __name__ == "__main__":
    main()
