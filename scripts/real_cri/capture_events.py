#!/usr/bin/python3
"""Captures what a real CRI runtime sends on GetContainerEvents for one pod's life.

Usage (as root, beside a running containerd with the CRI plugin):

    /usr/bin/python3 scripts/real_cri/capture_events.py SOCKET > OUT.json

Re-running it to refresh tests/_fixtures/cri_events_containerd_1_7.json (the
fixture was made with containerd 1.7.24~ds1-6+deb13u1, Debian 13's package,
unpacked on Debian 12 without installing it; it needs libc6 >= 2.34 and
bookworm's runc):

    D=/tmp/ctrd17; mkdir -p $D/lists/partial
    echo 'deb http://deb.debian.org/debian trixie main' > $D/trixie.list
    APT="-o Dir::Etc::sourcelist=$D/trixie.list -o Dir::Etc::sourceparts=-
         -o Dir::State::Lists=$D/lists"      # leaves the machine's apt state alone
    apt-get $APT update && (cd $D && apt-get $APT download containerd)
    dpkg -x $D/containerd_*.deb $D/root
    export PATH=$D/root/usr/bin:$PATH        # containerd and its shim, 1.7
    REAL_CRI_SUBNET=10.66.0.0/16 scripts/real_cri/up.sh $D/c.sock
    /usr/bin/python3 scripts/real_cri/capture_events.py $D/c.sock \\
        > tests/_fixtures/cri_events_containerd_1_7.json
    scripts/real_cri/down.sh $D/c.sock --purge

It uses an independent stack: Debian's python3-grpcio, and the project's
proto/cri/api.proto (field numbers as upstream's) compiled by protoc into a
temporary directory. Images are the ones up.sh imports
(localhost/real-cri/pause:1 as the sandbox image, localhost/real-cri/busybox:1).

Two scenarios, each a pod with one container. `kubeletLifecycle` is the
kubelet's whole sequence: RunPodSandbox, CreateContainer, StartContainer,
StopContainer (timeout 0, so SIGKILL), StopPodSandbox, RemoveContainer,
RemovePodSandbox. `podRemovedWithItsContainer` stops and removes the pod with
its container still running: RunPodSandbox, CreateContainer, StartContainer,
StopPodSandbox, RemovePodSandbox. After each call it reads
events until none came for QUIET_SECONDS, so every event is put under the call
that caused it. The output is normalised for a test fixture: IDs become roles
(`sandbox`, `app`), timestamps are dropped (stderr gets how far each event's
created_at was from its arrival), enums are their names.
"""

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time

import grpc

QUIET_SECONDS = 1.0
STEP_LIMIT_SECONDS = 30.0
SERVICE = "/runtime.v1.RuntimeService/"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROTO = os.path.join(REPO, "proto", "cri", "api.proto")


def compile_proto():
    """Compiles api.proto with protoc and imports the generated module."""
    out = tempfile.mkdtemp(prefix="capture-events-")
    subprocess.run(
        ["protoc", "-I", os.path.dirname(PROTO), "--python_out=" + out, PROTO],
        check=True,
    )
    sys.path.insert(0, out)
    import api_pb2  # noqa: E402 (generated above)

    return api_pb2


pb = compile_proto()


def unary(chan, method, request, response_type, timeout=60):
    call = chan.unary_unary(
        SERVICE + method,
        request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=response_type.FromString,
    )
    return call(request, timeout=timeout)


def read_events(chan, into, ready):
    """Reads GetContainerEvents into `into` as (arrival ns, event) pairs."""
    stream = chan.unary_stream(
        SERVICE + "GetContainerEvents",
        request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=pb.ContainerEventResponse.FromString,
    )(pb.GetEventsRequest())
    ready.set()
    try:
        for event in stream:
            into.put((time.time_ns(), event))
    except grpc.RpcError as err:
        if err.code() != grpc.StatusCode.CANCELLED:
            into.put((time.time_ns(), err))
    return stream


def drain(events):
    """The events that arrive until none came for QUIET_SECONDS."""
    got = []
    deadline = time.monotonic() + STEP_LIMIT_SECONDS
    while time.monotonic() < deadline:
        try:
            arrival, event = events.get(timeout=QUIET_SECONDS)
        except queue.Empty:
            return got
        if isinstance(event, grpc.RpcError):
            raise event
        got.append((arrival, event))
    raise RuntimeError("events did not settle within %.0f s" % STEP_LIMIT_SECONDS)


def enum_name(enum, value):
    return enum.Name(value)


def normalise(event, roles):
    def role(identifier):
        if identifier not in roles:
            roles[identifier] = "other-%d" % (len(roles) + 1)
        return roles[identifier]

    sandbox = None
    if event.HasField("pod_sandbox_status"):
        s = event.pod_sandbox_status
        sandbox = {"id": role(s.id), "state": enum_name(pb.PodSandboxState, s.state)}
    return {
        "type": enum_name(pb.ContainerEventType, event.container_event_type),
        "containerId": role(event.container_id),
        "podSandboxStatus": sandbox,
        "containersStatuses": [
            {
                "id": role(c.id),
                "name": c.metadata.name,
                "state": enum_name(pb.ContainerState, c.state),
                "exitCode": c.exit_code,
            }
            for c in event.containers_statuses
        ],
    }


def prime(chan, events):
    """Runs and removes a throw-away sandbox, and drops its events.

    containerd 1.7 sends every CRI subscriber's events from one shared queue
    (each event goes to one subscriber), and the server side of a stream
    whose client went away takes one more event before its send fails: the
    first change after a previous capture ends would be lost. This sandbox's
    four events (CREATED, STARTED, STOPPED, DELETED) absorb that.
    """
    config = pb.PodSandboxConfig(
        metadata=pb.PodSandboxMetadata(name="capture-primer", namespace="default",
                                       uid="capture-primer-%d" % os.getpid(), attempt=0))
    sandbox_id = unary(chan, "RunPodSandbox", pb.RunPodSandboxRequest(config=config),
                       pb.RunPodSandboxResponse).pod_sandbox_id
    unary(chan, "StopPodSandbox", pb.StopPodSandboxRequest(pod_sandbox_id=sandbox_id),
          pb.StopPodSandboxResponse)
    unary(chan, "RemovePodSandbox", pb.RemovePodSandboxRequest(pod_sandbox_id=sandbox_id),
          pb.RemovePodSandboxResponse)
    print("primer: %d of its 4 events arrived" % len(drain(events)), file=sys.stderr)


def run_pod(chan, events, uid, stop_and_remove_container, roles, lags_ms):
    """One pod's life, as steps of a call and the events it caused.

    With `stop_and_remove_container`, the kubelet's whole sequence (the
    container stopped and removed on its own); without, the pod is stopped
    and removed with its container still running (StopPodSandbox, then
    RemovePodSandbox).
    """
    steps = []

    def step(name, call, role=None):
        result = call()
        if role is not None:
            roles.setdefault(result, role)
        got = drain(events)
        for arrival, event in got:
            lags_ms.append((arrival - event.created_at) / 1e6)
        steps.append({"call": name, "events": [normalise(e, roles) for _, e in got]})
        return result

    sandbox_config = pb.PodSandboxConfig(
        metadata=pb.PodSandboxMetadata(name="capture", namespace="default", uid=uid, attempt=0),
        hostname="capture",
        labels={"io.kubernetes.pod.name": "capture", "io.kubernetes.pod.namespace": "default",
                "io.kubernetes.pod.uid": uid},
    )
    sandbox_id = step("RunPodSandbox", lambda: unary(
        chan, "RunPodSandbox", pb.RunPodSandboxRequest(config=sandbox_config),
        pb.RunPodSandboxResponse).pod_sandbox_id, "sandbox")
    container_config = pb.ContainerConfig(
        metadata=pb.ContainerMetadata(name="app", attempt=0),
        image=pb.ImageSpec(image="localhost/real-cri/busybox:1"),
        command=["/bin/sleep", "3600"],
        labels={"io.kubernetes.container.name": "app", "io.kubernetes.pod.uid": uid},
    )
    app_id = step("CreateContainer", lambda: unary(
        chan, "CreateContainer", pb.CreateContainerRequest(
            pod_sandbox_id=sandbox_id, config=container_config, sandbox_config=sandbox_config),
        pb.CreateContainerResponse).container_id, "app")
    step("StartContainer", lambda: unary(
        chan, "StartContainer", pb.StartContainerRequest(container_id=app_id),
        pb.StartContainerResponse))
    if stop_and_remove_container:
        step("StopContainer", lambda: unary(
            chan, "StopContainer", pb.StopContainerRequest(container_id=app_id, timeout=0),
            pb.StopContainerResponse))
    step("StopPodSandbox", lambda: unary(
        chan, "StopPodSandbox", pb.StopPodSandboxRequest(pod_sandbox_id=sandbox_id),
        pb.StopPodSandboxResponse))
    if stop_and_remove_container:
        step("RemoveContainer", lambda: unary(
            chan, "RemoveContainer", pb.RemoveContainerRequest(container_id=app_id),
            pb.RemoveContainerResponse))
    step("RemovePodSandbox", lambda: unary(
        chan, "RemovePodSandbox", pb.RemovePodSandboxRequest(pod_sandbox_id=sandbox_id),
        pb.RemovePodSandboxResponse))
    return steps


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    chan = grpc.insecure_channel("unix://" + sys.argv[1])
    version = unary(chan, "Version", pb.VersionRequest(version="v1"), pb.VersionResponse)
    events = queue.Queue()
    ready = threading.Event()
    reader = threading.Thread(target=read_events, args=(chan, events, ready), daemon=True)
    reader.start()
    ready.wait()
    # The stream is open once containerd has taken the call; nothing on the
    # wire says so, so give it a moment before the first change.
    time.sleep(QUIET_SECONDS)
    stale = drain(events)
    if stale:
        print("%d event(s) from before the capture were skipped" % len(stale), file=sys.stderr)

    prime(chan, events)
    lags_ms = []
    scenarios = {}
    unknown = []
    for name, kubelet_removes_containers in (("kubeletLifecycle", True),
                                             ("podRemovedWithItsContainer", False)):
        roles = {}
        scenarios[name] = run_pod(chan, events, "%s-%d" % (name.lower(), os.getpid()),
                                  kubelet_removes_containers, roles, lags_ms)
        unknown += sorted(r for r in roles.values() if r.startswith("other-"))
    chan.close()

    if unknown:
        print("events named IDs of other pods (%s): is the runtime private?" % ", ".join(unknown),
              file=sys.stderr)
        return 1
    print("created_at to arrival, ms: %s" % ", ".join("%.3f" % x for x in lags_ms),
          file=sys.stderr)
    json.dump({
        "capturedBy": "scripts/real_cri/capture_events.py",
        "runtime": {"name": version.runtime_name, "version": version.runtime_version,
                    "apiVersion": version.runtime_api_version},
        "scenarios": scenarios,
    }, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
