/**
 * Builders of CRI inputs for the converter tests: kubelet-style sandboxes and
 * containers with their statuses, times given in seconds after {@linkcode T0}.
 *
 * @module
 */

import { KUBELET_ANNOTATION, KUBELET_LABEL } from "../../../src/model/kubelet_keys.ts";
import {
  CONTAINER_STATE,
  type ContainerInput,
  NAMESPACE_MODE,
  POD_SANDBOX_STATE,
  type SandboxInput,
} from "../../../src/sources/cri/mod.ts";

/** A base time, Unix seconds (2023-11-14T22:13:20Z). */
export const T0 = 1_700_000_000;

/** RFC 3339 of `T0 + seconds`. */
export function at(seconds: number): string {
  return new Date((T0 + seconds) * 1000).toISOString().slice(0, 19) + "Z";
}

function ns(seconds: number | undefined): number {
  return seconds === undefined ? 0 : (T0 + seconds) * 1e9;
}

/** Fields of {@linkcode sandbox}. */
export interface SandboxSpec {
  id?: string;
  name?: string;
  namespace?: string;
  uid?: string;
  attempt?: number;
  ready?: boolean;
  created?: number;
  createdAtNs?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ip?: string;
  additionalIps?: string[];
  hostNetwork?: boolean;
  /** No inspected status (only the list item). */
  noStatus?: boolean;
}

/**
 * A kubelet-style sandbox: the pod's labels plus the three pod labels.
 *
 * @param spec The fields that differ from the defaults.
 * @returns The input.
 */
export function sandbox(spec: SandboxSpec = {}): SandboxInput {
  const name = spec.name ?? "web";
  const namespace = spec.namespace ?? "default";
  const uid = spec.uid ?? "uid-1";
  const id = spec.id ?? `sb-${uid}-${spec.attempt ?? 0}`;
  const state = spec.ready === false ? POD_SANDBOX_STATE.notReady : POD_SANDBOX_STATE.ready;
  const labels = {
    ...(spec.labels ?? { app: "web" }),
    [KUBELET_LABEL.podName]: name,
    [KUBELET_LABEL.podNamespace]: namespace,
    [KUBELET_LABEL.podUid]: uid,
  };
  const annotations = spec.annotations ?? {};
  const metadata = { name, namespace, uid, attempt: spec.attempt ?? 0 };
  const createdAt = spec.createdAtNs ?? ns(spec.created ?? 0);
  const item = { id, metadata, state, createdAt, labels, annotations, runtimeHandler: "" };
  if (spec.noStatus) return { sandbox: item };
  const mode = spec.hostNetwork ? NAMESPACE_MODE.node : NAMESPACE_MODE.pod;
  return {
    sandbox: item,
    status: {
      ...item,
      network: {
        ip: spec.ip ?? (spec.hostNetwork ? "" : "10.88.0.5"),
        additionalIps: (spec.additionalIps ?? []).map((ip) => ({ ip })),
      },
      linux: {
        namespaces: { options: { network: mode, pid: NAMESPACE_MODE.container, ipc: mode } },
      },
    },
  };
}

/** Fields of {@linkcode container}. */
export interface ContainerSpec {
  id?: string;
  sandboxId?: string;
  uid?: string;
  name?: string;
  attempt?: number;
  state?: "created" | "running" | "exited" | "unknown" | number;
  created?: number;
  started?: number;
  finished?: number;
  exitCode?: number;
  reason?: string;
  message?: string;
  image?: string;
  userImage?: string;
  imageRef?: string;
  /** `io.kubernetes.container.restartCount`; `null` leaves it out. */
  restartCount?: string | null;
  type?: "init" | "container" | "ephemeral";
  annotations?: Record<string, string>;
  noStatus?: boolean;
}

/**
 * A kubelet-style container with its status.
 *
 * @param spec The fields that differ from the defaults.
 * @returns The input.
 */
export function container(spec: ContainerSpec = {}): ContainerInput {
  const name = spec.name ?? "app";
  const attempt = spec.attempt ?? 0;
  const uid = spec.uid ?? "uid-1";
  const id = spec.id ?? `c-${uid}-${name}-${attempt}`;
  const stateName = spec.state ?? "running";
  const state = typeof stateName === "number" ? stateName : CONTAINER_STATE[stateName];
  const annotations: Record<string, string> = {
    [KUBELET_ANNOTATION.containerHash]: "1a2b3c",
    [KUBELET_ANNOTATION.terminationMessagePath]: "/dev/termination-log",
    [KUBELET_ANNOTATION.terminationMessagePolicy]: "File",
    [KUBELET_ANNOTATION.containerType]: spec.type ?? "container",
    ...(spec.restartCount === null
      ? {}
      : { [KUBELET_ANNOTATION.restartCount]: spec.restartCount ?? String(attempt) }),
    ...spec.annotations,
  };
  const labels = {
    [KUBELET_LABEL.podName]: "web",
    [KUBELET_LABEL.podNamespace]: "default",
    [KUBELET_LABEL.podUid]: uid,
    [KUBELET_LABEL.containerName]: name,
  };
  const image = {
    image: spec.image ?? "docker.io/library/nginx:1.25",
    userSpecifiedImage: spec.userImage ?? "",
  };
  const created = spec.created ?? 1 + attempt * 10;
  const item = {
    id,
    podSandboxId: spec.sandboxId ?? `sb-${uid}-0`,
    metadata: { name, attempt },
    image,
    imageRef: spec.imageRef ?? "sha256:0123abcd",
    state,
    createdAt: ns(created),
    labels,
    annotations,
    imageId: "",
  };
  if (spec.noStatus) return { container: item };
  const running = state === CONTAINER_STATE.running;
  const exited = state === CONTAINER_STATE.exited;
  return {
    container: item,
    status: {
      id,
      metadata: { name, attempt },
      state,
      createdAt: ns(created),
      startedAt: running || exited ? ns(spec.started ?? created + 1) : 0,
      finishedAt: exited ? ns(spec.finished ?? created + 5) : 0,
      exitCode: spec.exitCode ?? 0,
      image,
      imageRef: item.imageRef,
      reason: spec.reason ?? "",
      message: spec.message ?? "",
      labels,
      annotations,
      logPath: "",
      imageId: "",
    },
  };
}

/** Collects rejections reported by the converter. */
export function rejections(): {
  list: { reason: string; detail: string }[];
  onReject: (reason: string, detail: string) => void;
  reasons: () => string[];
} {
  const list: { reason: string; detail: string }[] = [];
  return {
    list,
    onReject: (reason, detail) => list.push({ reason, detail }),
    reasons: () => list.map((r) => r.reason),
  };
}
