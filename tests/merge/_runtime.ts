/**
 * Builds what the CRI source would report for a pod: kubelet-style sandbox
 * and containers, converted by the real CRI converter. Times are RFC 3339
 * strings so tests can line them up with the kubelet fixtures.
 *
 * @module
 */

import { KUBELET_ANNOTATION, KUBELET_LABEL } from "../../src/model/kubelet_keys.ts";
import { type PodSnapshot, snapshotOf } from "../../src/model/pod.ts";
import {
  CONTAINER_STATE,
  type ContainerInput,
  convertPod,
  NAMESPACE_MODE,
  POD_SANDBOX_STATE,
} from "../../src/sources/cri/mod.ts";

/** One container instance in the runtime. */
export interface RuntimeContainer {
  name: string;
  /** Full container ID, without the `containerd://` prefix. */
  id: string;
  state: "created" | "running" | "exited";
  exitCode?: number;
  attempt?: number;
  init?: boolean;
  /** RFC 3339. */
  created: string;
  started?: string;
  finished?: string;
}

/** A pod as the runtime holds it. */
export interface RuntimePod {
  uid: string;
  name: string;
  namespace: string;
  created: string;
  annotations?: Record<string, string>;
  labels?: Record<string, string>;
  ip?: string;
  hostNetwork?: boolean;
  containers: RuntimeContainer[];
}

function ns(time: string | undefined): number {
  return time === undefined ? 0 : Date.parse(time) * 1e6;
}

/**
 * Converts a runtime pod description with the CRI source's converter.
 *
 * @param pod The pod.
 * @returns Its snapshot as the CRI source reports it.
 */
export function runtimePod(pod: RuntimePod): PodSnapshot {
  const sandboxId = `sb-${pod.uid}`;
  const labels = {
    ...pod.labels,
    [KUBELET_LABEL.podName]: pod.name,
    [KUBELET_LABEL.podNamespace]: pod.namespace,
    [KUBELET_LABEL.podUid]: pod.uid,
  };
  const metadata = { name: pod.name, namespace: pod.namespace, uid: pod.uid, attempt: 0 };
  const item = {
    id: sandboxId,
    metadata,
    state: POD_SANDBOX_STATE.ready,
    createdAt: ns(pod.created),
    labels,
    annotations: pod.annotations ?? {},
    runtimeHandler: "",
  };
  const mode = pod.hostNetwork ? NAMESPACE_MODE.node : NAMESPACE_MODE.pod;
  const sandbox = {
    sandbox: item,
    status: {
      ...item,
      network: { ip: pod.hostNetwork ? "" : pod.ip ?? "10.244.1.99", additionalIps: [] },
      linux: {
        namespaces: { options: { network: mode, pid: NAMESPACE_MODE.container, ipc: mode } },
      },
    },
  };
  const containers: ContainerInput[] = pod.containers.map((c) => {
    const annotations = {
      [KUBELET_ANNOTATION.restartCount]: String(c.attempt ?? 0),
      [KUBELET_ANNOTATION.containerType]: c.init ? "init" : "container",
    };
    const cLabels = {
      [KUBELET_LABEL.podName]: pod.name,
      [KUBELET_LABEL.podNamespace]: pod.namespace,
      [KUBELET_LABEL.podUid]: pod.uid,
      [KUBELET_LABEL.containerName]: c.name,
    };
    const image = { image: `registry.example/${c.name}:1`, userSpecifiedImage: "" };
    const listed = {
      id: c.id,
      podSandboxId: sandboxId,
      metadata: { name: c.name, attempt: c.attempt ?? 0 },
      image,
      imageRef: `sha256:${c.id.slice(0, 12)}`,
      state: CONTAINER_STATE[c.state],
      createdAt: ns(c.created),
      labels: cLabels,
      annotations,
      imageId: "",
    };
    return {
      container: listed,
      status: {
        ...listed,
        startedAt: ns(c.started),
        finishedAt: ns(c.finished),
        exitCode: c.exitCode ?? 0,
        reason: "",
        message: "",
        logPath: "",
      },
    };
  });
  const converted = convertPod([sandbox], containers, {
    nodeName: "node-1",
    hostIPs: ["10.0.0.11"],
    runtimeName: "containerd",
  });
  if (converted === undefined) throw new TypeError(`Cannot convert runtime pod "${pod.name}"`);
  return snapshotOf(converted);
}

/** UID of the fixture's `web` pod. */
export const WEB_UID = "6f1c2b3a-4d5e-4f60-8a7b-9c0d1e2f3a4b";
/** Its nginx container's ID. */
export const WEB_CONTAINER = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90";

/**
 * The fixture's `web` pod (tests/_fixtures/kubelet/pods.json) as the runtime runs it.
 *
 * @param containers Its container instances; one running nginx by default.
 * @returns The runtime's snapshot.
 */
export function webRuntime(containers?: RuntimeContainer[]): PodSnapshot {
  return runtimePod({
    uid: WEB_UID,
    name: "web-7d9c6b8f5-x2k4p",
    namespace: "shop",
    created: "2026-03-01T10:00:01Z",
    labels: { "app.kubernetes.io/name": "web" },
    ip: "10.244.1.17",
    containers: containers ?? [{
      name: "nginx",
      id: WEB_CONTAINER,
      state: "running",
      created: "2026-03-01T10:00:04Z",
      started: "2026-03-01T10:00:05Z",
    }],
  });
}
