/**
 * Pure mapping from what a CRI runtime reports (pod sandboxes, containers and
 * their statuses) to `v1.Pod` objects: identity from the `kuberuntime` labels,
 * IPs and conditions from the sandboxes, containers from `_containers.ts`. The status rules themselves
 * (phase, conditions, readiness) are the kubelet's, from `src/status/`.
 *
 * What CRI does not carry is derived or left out, and documented here:
 * - `spec.restartPolicy` is unknown; the phase is derived as the kubelet does
 *   for `Always` (the default), unless the caller passes the real policy.
 * - A pod is never "terminal" from CRI alone, so a pod whose containers have
 *   all exited stays `Running` (restartPolicy Always) until its sandbox is
 *   removed.
 * - Readiness and startup probes are the kubelet's: a container is `ready`
 *   and `started` when it is running.
 * - Init containers are known by the kubelet's `io.kubernetes.container.type`
 *   annotation; they count as regular (non-sidecar) init containers: ready
 *   once they exited 0.
 * - `lastTransitionTime` of a condition is derived from the runtime's own
 *   times (sandbox creation, container start and finish), so it is the same
 *   after a restart of this daemon.
 * - `metadata.creationTimestamp` and `status.startTime` are the creation time
 *   of the pod's first sandbox still known.
 * - `qosClass`, volumes, env and other spec fields are not in CRI: omitted.
 *
 * @module
 */

import type { JsonObject } from "../../model/json.ts";
import { KUBELET_ANNOTATION, KUBELET_LABEL } from "../../model/kubelet_keys.ts";
import type { PodObject } from "../../model/pod.ts";
import {
  CONDITION_REASON,
  conditionOf,
  containersReadyCondition,
  initializedCondition,
  phaseFromStatuses,
  readyCondition,
  type RestartPolicy,
} from "../../status/mod.ts";
import {
  cleanMap,
  criTime,
  identifier,
  type IpFamily,
  ipFamily,
  MAX_ID_LENGTH,
  MAX_NAME_LENGTH,
  MAX_NAMESPACE_LENGTH,
  MAX_UID_LENGTH,
  type RejectHandler,
  type RejectReason,
  sortableTime,
} from "./_sanitize.ts";
import {
  type Container,
  NAMESPACE_MODE,
  POD_SANDBOX_STATE,
  type PodSandbox,
  type PodSandboxStatus,
} from "./_types.ts";
import {
  type ContainerGroup,
  type ContainerInput,
  groupContainers,
  terminationGracePeriod,
} from "./_containers.ts";

export type { ContainerInput, RejectHandler, RejectReason };

/** The kubelet's own keys: never shown as a pod's labels or annotations. */
const INTERNAL_KEYS: ReadonlySet<string> = new Set<string>([
  ...Object.values(KUBELET_LABEL),
  ...Object.values(KUBELET_ANNOTATION),
]);

/** A pod sandbox as listed, plus its inspected status when known. */
export interface SandboxInput {
  readonly sandbox: PodSandbox;
  readonly status?: PodSandboxStatus | undefined;
}

/**
 * The scheme of container IDs when the runtime's Version gives no name (or
 * cannot be asked): `unknown://<id>` says the runtime is not known, where a
 * guess such as `containerd://` would present it as a real one.
 */
export const UNNAMED_RUNTIME = "unknown";

/**
 * The scheme of container IDs for a runtime name as its Version gave it.
 *
 * @param runtimeName `runtimeName` of the runtime's Version; empty when it gave none.
 * @returns The name, or {@linkcode UNNAMED_RUNTIME} when it is empty.
 */
export function containerIdScheme(runtimeName: string | undefined): string {
  return runtimeName || UNNAMED_RUNTIME;
}

/** Options of {@linkcode convertPod}. */
export interface ConvertOptions {
  /** `spec.nodeName` of every pod. */
  nodeName?: string;
  /** The node's IPs (`status.hostIP(s)`; also the pod IPs of host-network pods). */
  hostIPs?: readonly string[];
  /**
   * Prefix of container IDs, from the runtime's Version (`containerd`, `cri-o`);
   * empty or omitted: {@linkcode UNNAMED_RUNTIME}.
   */
  runtimeName?: string;
  /** The pod's real restart policy when another source knows it. @default {"Always"} */
  restartPolicy?: RestartPolicy;
  /** Receives each skipped item or field (for the rejection metric and the log). */
  onReject?: RejectHandler;
}

/**
 * Returns the pod UID a sandbox belongs to: its metadata UID, else the
 * kubelet's UID label.
 *
 * @param sandbox A listed sandbox.
 * @returns The UID, or `undefined` when it has no valid one.
 */
export function sandboxPodUid(sandbox: PodSandbox): string | undefined {
  return identifier(sandbox.metadata?.uid, MAX_UID_LENGTH) ??
    identifier(sandbox.labels?.[KUBELET_LABEL.podUid], MAX_UID_LENGTH);
}

/**
 * Returns the pod UID a container's labels name (for a container whose
 * sandbox is not listed).
 *
 * @param container A listed container.
 * @returns The UID, or `undefined`.
 */
export function containerPodUid(container: Container): string | undefined {
  return identifier(container.labels?.[KUBELET_LABEL.podUid], MAX_UID_LENGTH);
}

/**
 * Reports whether a CRI ID is usable as a key.
 *
 * @param id The ID.
 * @returns `true` when valid.
 */
export function isValidCriId(id: unknown): id is string {
  return identifier(id, MAX_ID_LENGTH) !== undefined;
}

/**
 * Builds one pod from all the sandboxes (attempts) and containers the runtime
 * holds for one pod UID. The newest ready sandbox names the pod and gives its
 * IPs (else the newest one); the newest instance of each container is its
 * state and the one before it its `lastState`.
 *
 * @param sandboxes The pod's sandboxes; at least one.
 * @param containers The pod's containers, all instances.
 * @param options Node name, host IPs, runtime name, rejection handler.
 * @returns The pod, or `undefined` when its identity is invalid (reported).
 */
export function convertPod(
  sandboxes: readonly SandboxInput[],
  containers: readonly ContainerInput[],
  options: ConvertOptions = {},
): PodObject | undefined {
  const onReject = options.onReject ?? ignoreRejection;
  if (sandboxes.length === 0) return undefined;
  const ordered = [...sandboxes].sort(compareSandboxes);
  const newest = ordered[0]!;
  const chosen = ordered.find((s) => sandboxState(s) === POD_SANDBOX_STATE.ready) ?? newest;
  const sandboxId = JSON.stringify(chosen.sandbox.id);

  const meta = chosen.status?.metadata ?? chosen.sandbox.metadata;
  const labels = chosen.status?.labels ?? chosen.sandbox.labels ?? {};
  const name = identifier(meta?.name || labels[KUBELET_LABEL.podName], MAX_NAME_LENGTH);
  const namespace = identifier(
    meta?.namespace || labels[KUBELET_LABEL.podNamespace],
    MAX_NAMESPACE_LENGTH,
  );
  const uid = identifier(meta?.uid || labels[KUBELET_LABEL.podUid], MAX_UID_LENGTH);
  if (name === undefined || namespace === undefined || uid === undefined) {
    onReject("invalid_identity", `sandbox ${sandboxId} has no valid pod name, namespace or UID`);
    return undefined;
  }

  const firstCreated = ordered.reduce(
    (min, s) => Math.min(min, sortableTime(s.sandbox.createdAt) || Infinity),
    Infinity,
  );
  const startTime = Number.isFinite(firstCreated)
    ? criTime(firstCreated, onReject, `sandbox ${sandboxId} createdAt`)
    : undefined;

  const metadata: PodObject["metadata"] = { name, namespace, uid };
  if (startTime !== undefined) metadata.creationTimestamp = startTime;
  const podLabels = cleanMap(labels, {
    omit: INTERNAL_KEYS,
    onReject,
    what: `labels of sandbox ${sandboxId}`,
  });
  if (podLabels !== undefined) metadata.labels = podLabels;
  const podAnnotations = cleanMap(chosen.status?.annotations ?? chosen.sandbox.annotations, {
    omit: INTERNAL_KEYS,
    onReject,
    what: `annotations of sandbox ${sandboxId}`,
  });
  if (podAnnotations !== undefined) metadata.annotations = podAnnotations;

  const nsOptions = chosen.status?.linux?.namespaces?.options;
  const hostNetwork = nsOptions?.network === NAMESPACE_MODE.node;
  const hostIPs = validIps(options.hostIPs ?? [], onReject, "host IP");

  const groups = groupContainers(containers, containerIdScheme(options.runtimeName), onReject);

  const spec: JsonObject = {};
  if (options.nodeName) spec.nodeName = options.nodeName;
  if (groups.init.length > 0) spec.initContainers = groups.init.map((g) => g.spec);
  spec.containers = groups.regular.map((g) => g.spec);
  if (groups.ephemeral.length > 0) spec.ephemeralContainers = groups.ephemeral.map((g) => g.spec);
  if (hostNetwork) spec.hostNetwork = true;
  if (nsOptions?.pid === NAMESPACE_MODE.node) spec.hostPID = true;
  if (nsOptions?.ipc === NAMESPACE_MODE.node) spec.hostIPC = true;
  const grace = terminationGracePeriod(containers);
  if (grace !== undefined) spec.terminationGracePeriodSeconds = grace;

  const initStatuses = groups.init.map((g) => g.status);
  const regularStatuses = groups.regular.map((g) => g.status);
  const phase = phaseFromStatuses({
    initContainerStatuses: initStatuses,
    containerStatuses: regularStatuses,
    restartPolicy: options.restartPolicy ?? "Always",
  });

  const status: JsonObject = { phase };
  status.conditions = podConditions({
    phase,
    sandboxes: ordered,
    hostNetwork,
    init: groups.init,
    regular: groups.regular,
    startTime,
    onReject,
  });
  if (hostIPs.length > 0) {
    status.hostIP = hostIPs[0]!;
    status.hostIPs = hostIPs.map((ip) => ({ ip }));
  }
  let podIPs = sandboxState(chosen) === POD_SANDBOX_STATE.ready
    ? sandboxIps(chosen, hostIPs, onReject)
    : [];
  if (hostNetwork && podIPs.length === 0) podIPs = hostIPs.slice(0, 2);
  if (podIPs.length > 0) {
    status.podIP = podIPs[0]!;
    status.podIPs = podIPs.map((ip) => ({ ip }));
  }
  if (startTime !== undefined) status.startTime = startTime;
  if (initStatuses.length > 0) status.initContainerStatuses = initStatuses;
  if (regularStatuses.length > 0) status.containerStatuses = regularStatuses;
  if (groups.ephemeral.length > 0) {
    status.ephemeralContainerStatuses = groups.ephemeral.map((g) => g.status);
  }
  return { metadata, spec, status };
}

// ------------------------------------------------------------------ sandboxes

function sandboxState(input: SandboxInput): number {
  return input.status?.state ?? input.sandbox.state;
}

/** Newest first: creation time, then attempt, then ID (for a stable order). */
function compareSandboxes(a: SandboxInput, b: SandboxInput): number {
  return sortableTime(b.sandbox.createdAt) - sortableTime(a.sandbox.createdAt) ||
    (b.sandbox.metadata?.attempt ?? 0) - (a.sandbox.metadata?.attempt ?? 0) ||
    (a.sandbox.id < b.sandbox.id ? 1 : a.sandbox.id > b.sandbox.id ? -1 : 0);
}

function validIps(
  candidates: readonly unknown[],
  onReject: RejectHandler,
  what: string,
): string[] {
  const out: string[] = [];
  for (const ip of candidates) {
    if (typeof ip === "string" && ip !== "" && ipFamily(ip) !== undefined) out.push(ip);
    else if (ip !== "") onReject("invalid_ip", `${what} ${JSON.stringify(ip)} dropped`);
  }
  return out;
}

/**
 * The pod IPs of a sandbox, ordered as the kubelet's `sortPodIPs`: the first
 * IP of the node's family, then the first of the other family.
 */
function sandboxIps(
  input: SandboxInput,
  hostIPs: readonly string[],
  onReject: RejectHandler,
): string[] {
  const network = input.status?.network;
  if (!network) return [];
  const all = validIps(
    [network.ip, ...(network.additionalIps ?? []).map((p) => p?.ip)],
    onReject,
    `pod IP of sandbox ${JSON.stringify(input.sandbox.id)}`,
  );
  const primary: IpFamily = hostIPs.length > 0 && ipFamily(hostIPs[0]!) === 6 ? 6 : 4;
  const first = all.find((ip) => ipFamily(ip) === primary);
  const second = all.find((ip) => ipFamily(ip) !== primary);
  return [first, second].filter((ip): ip is string => ip !== undefined);
}

// ------------------------------------------------------------------ conditions

interface ConditionInputs {
  readonly phase: string;
  /** Newest first. */
  readonly sandboxes: readonly SandboxInput[];
  readonly hostNetwork: boolean;
  readonly init: readonly ContainerGroup[];
  readonly regular: readonly ContainerGroup[];
  readonly startTime: string | undefined;
  readonly onReject: RejectHandler;
}

/** The latest of some CRI times (ns), as RFC 3339, or `fallback`. */
function latest(times: readonly number[], fallback: string | undefined): string | undefined {
  let max = 0;
  for (const t of times) max = Math.max(max, sortableTime(t));
  return max === 0 ? fallback : criTime(max, ignoreRejection, "condition time");
}

function instanceTime(group: ContainerGroup, field: "startedAt" | "finishedAt"): number {
  const newest = group.instances[0]!;
  return newest.status?.[field] || newest.status?.createdAt || newest.container.createdAt;
}

/**
 * The kubelet's conditions for the containers the runtime knows (the spec is
 * theirs: no sidecars, no readiness gates), each with a transition time taken
 * from the runtime's own records, so it is the same after a daemon restart.
 */
function podConditions(inputs: ConditionInputs): JsonObject[] {
  const { phase, sandboxes, init, regular, startTime } = inputs;
  const newest = sandboxes[0]!;
  const readyCount = sandboxes.filter((s) => sandboxState(s) === POD_SANDBOX_STATE.ready).length;
  const hasIp = (newest.status?.network?.ip ?? "") !== "";
  const sandboxOk = readyCount <= 1 && sandboxState(newest) === POD_SANDBOX_STATE.ready &&
    (inputs.hostNetwork || hasIp);
  const newestCreated = criTime(sortableTime(newest.sandbox.createdAt), ignoreRejection, "");

  const spec: JsonObject = {
    initContainers: init.map((g) => ({ name: g.name })),
    containers: regular.map((g) => ({ name: g.name })),
  };
  const statuses = { init: init.map((g) => g.status), regular: regular.map((g) => g.status) };
  const initialized = initializedCondition(spec, statuses, phase);
  const initDone = latest(init.map((g) => instanceTime(g, "finishedAt")), startTime);
  // A runtime that reports no regular container leaves their statuses unknown.
  const containersReady = containersReadyCondition(
    spec,
    regular.length === 0 ? undefined : statuses,
    phase,
  );
  const unready = regular.filter((g) => g.status.ready !== true);
  const readyAt = containersReady.status === "True"
    ? latest(regular.map((g) => instanceTime(g, "startedAt")), startTime)
    : latest(
      (containersReady.reason === CONDITION_REASON.containersNotReady ? unready : regular)
        .map((g) => instanceTime(g, "finishedAt")),
      startTime,
    );
  return [
    conditionOf(
      { type: "PodReadyToStartContainers", status: sandboxOk ? "True" : "False" },
      newestCreated,
    ),
    conditionOf(initialized, initDone),
    conditionOf(readyCondition(spec, containersReady, []), readyAt),
    conditionOf(containersReady, readyAt),
    conditionOf({ type: "PodScheduled", status: "True" }, startTime),
  ];
}

function ignoreRejection(): void {}
