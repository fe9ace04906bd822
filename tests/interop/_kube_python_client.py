"""Debian's python3-kubernetes, unchanged, against the daemon's HTTP API.
Usage: _kube_python_client.py SERVER TOKEN CA_FILE. Talks a line protocol with the
test: prints one JSON object per step and, where the test must change the
node, waits for a line on stdin before going on."""
import json
import sys

from kubernetes import client, watch
from kubernetes.client.rest import ApiException


def say(obj):
    print(json.dumps(obj), flush=True)


def wait():
    return sys.stdin.readline().strip()


def api_for(token):
    cfg = client.Configuration()
    cfg.host = sys.argv[1]
    cfg.ssl_ca_cert = sys.argv[3]
    cfg.api_key = {"authorization": "Bearer " + token}
    return client.CoreV1Api(client.ApiClient(cfg))


def key(pod):
    return pod.metadata.namespace + "/" + pod.metadata.name


def status_of(fn):
    try:
        fn()
        return 200
    except ApiException as e:
        return e.status


def main():
    v1 = api_for(sys.argv[2])
    pods = v1.list_pod_for_all_namespaces()
    rv = pods.metadata.resource_version
    page1 = v1.list_pod_for_all_namespaces(limit=4)
    page2 = v1.list_pod_for_all_namespaces(limit=4, _continue=page1.metadata._continue)
    one = v1.read_namespaced_pod("web-1", "shop")
    say({
        "step": "list",
        "keys": sorted(key(p) for p in pods.items),
        "containers": sum(len(p.spec.containers) for p in pods.items),
        "rv": rv,
        "labelled": sorted(key(p) for p in v1.list_namespaced_pod("shop", label_selector="app in (web)").items),
        "fields": sorted(key(p) for p in v1.list_pod_for_all_namespaces(field_selector="status.phase=Pending").items),
        "paged": [key(p) for p in page1.items + page2.items],
        "remaining": page1.metadata.remaining_item_count,
        "one_uid": one.metadata.uid,
        "one_ip": one.status.pod_ip,
        "not_found": status_of(lambda: v1.read_namespaced_pod("nope", "shop")),
        "unauthorized": status_of(lambda: api_for("wrong").list_pod_for_all_namespaces()),
    })
    wait()  # the test changes web-1, then api-7

    # A watch from the list's resourceVersion, cut after its first event.
    seen = []
    w = watch.Watch()
    last = rv
    for ev in w.stream(v1.list_pod_for_all_namespaces, resource_version=rv, _request_timeout=30):
        seen.append([ev["type"], key(ev["object"]), ev["object"].metadata.labels.get("gen", "")])
        last = ev["object"].metadata.resource_version
        w.stop()
        break
    say({"step": "cut", "seen": seen, "last": last})
    wait()  # the test deletes batch-1 while nobody watches

    w = watch.Watch()
    for ev in w.stream(v1.list_pod_for_all_namespaces, resource_version=last, _request_timeout=30):
        seen.append([ev["type"], key(ev["object"]), ev["object"].metadata.labels.get("gen", "")])
        last = ev["object"].metadata.resource_version
        if len(seen) == 3:
            w.stop()
            break
    say({"step": "resumed", "seen": seen, "last": last})

    # Bookmarks: a selected watch that sees nothing still learns the position.
    w = watch.Watch()
    bookmark = None
    for ev in w.stream(v1.list_namespaced_pod, "jobs", resource_version=last,
                       allow_watch_bookmarks=True, _request_timeout=30):
        if ev["type"] == "BOOKMARK":
            bookmark = ev["raw_object"]["metadata"]["resourceVersion"]
            w.stop()
            break
    say({"step": "bookmark", "rv": bookmark})
    wait()  # the test changes report (in jobs), then many pods

    w = watch.Watch()
    after = []
    for ev in w.stream(v1.list_namespaced_pod, "jobs", resource_version=bookmark, _request_timeout=30):
        after.append([ev["type"], key(ev["object"])])
        w.stop()
        break
    gone = None
    try:
        for ev in watch.Watch().stream(v1.list_pod_for_all_namespaces, resource_version=rv,
                                       _request_timeout=30):
            pass
    except ApiException as e:
        gone = [e.status, e.reason]
    say({"step": "end", "after_bookmark": after, "gone": gone})


main()
