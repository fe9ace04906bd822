/**
 * Derives a pod's `status` from its container statuses the way the kubelet
 * does: the phase from container states and the restart policy, the five
 * pod conditions with stable transition times, IPs, start time and QoS.
 *
 * @module
 */

import type { JsonObject } from "../../model/json.ts";
import { POD_PHASE, type PodPhase } from "../../model/pod.ts";
import { rfc3339 } from "../../model/rfc3339.ts";
import {
  type ConditionDraft,
  containersReadyCondition,
  initializedCondition,
  isTerminalPhase,
  podPhaseOf,
  readyCondition,
} from "../../status/mod.ts";

/** What the runtime knows about a pod, besides its spec. */
export interface PodRuntime {
  /** One `v1.ContainerStatus` per init container, in spec order. */
  readonly initStatuses: readonly JsonObject[];
  /** One `v1.ContainerStatus` per container, in spec order. */
  readonly statuses: readonly JsonObject[];
  /** The sandbox exists and its network is set up. */
  readonly sandboxReady: boolean;
  readonly podIP?: string;
  readonly startTimeMs: number;
}

/** Inputs of {@linkcode deriveStatus}. */
export interface DeriveStatusOptions {
  readonly restartPolicy: string;
  readonly runtime: PodRuntime;
  /** The status before this change: keeps condition transition times. */
  readonly prev: JsonObject | undefined;
  readonly nowMs: number;
  readonly hostIP: string;
  readonly qosClass: string;
}

function stateOf(status: JsonObject): JsonObject {
  return (status.state ?? {}) as JsonObject;
}

function terminatedExit(state: JsonObject): number | undefined {
  const t = state.terminated as JsonObject | undefined;
  return t === undefined ? undefined : (t.exitCode as number);
}

/**
 * The pod phase from its container statuses, by the kubelet's `getPhase`
 * (the simulated workloads have no sidecars).
 */
function phaseOf(
  restartPolicy: string,
  initStatuses: readonly JsonObject[],
  statuses: readonly JsonObject[],
): PodPhase {
  const spec: JsonObject = {
    restartPolicy,
    initContainers: initStatuses.map((s) => ({ name: s.name ?? null })),
    containers: statuses.map((s) => ({ name: s.name ?? null })),
  };
  return podPhaseOf({ spec, statuses: [...initStatuses, ...statuses] });
}

type Condition = ConditionDraft;

function conditionsOf({ runtime }: DeriveStatusOptions, phase: PodPhase): Condition[] {
  const terminal = isTerminalPhase(phase);
  // The kubelet's rules (src/status/) over the spec the runtime view implies:
  // no sidecars, no readiness gates; an init container is done once it exited 0.
  const names = (list: readonly JsonObject[]) => list.map((s) => ({ name: s.name ?? null }));
  const spec: JsonObject = {
    initContainers: names(runtime.initStatuses),
    containers: names([...runtime.statuses].sort(byName)),
  };
  const statuses = {
    init: runtime.initStatuses.map((s) => ({ ...s, ready: terminatedExit(stateOf(s)) === 0 })),
    regular: [...runtime.statuses],
  };
  const containersReady = containersReadyCondition(spec, statuses, phase);
  return [
    {
      type: "PodReadyToStartContainers",
      status: runtime.sandboxReady && !terminal ? "True" : "False",
    },
    initializedCondition(spec, statuses, phase),
    readyCondition(spec, containersReady, []),
    containersReady,
    { type: "PodScheduled", status: "True" },
  ];
}

function withTransitionTimes(
  conditions: Condition[],
  prev: JsonObject | undefined,
  now: string,
): JsonObject[] {
  const before = new Map<string, JsonObject>();
  for (const c of (prev?.conditions ?? []) as JsonObject[]) before.set(c.type as string, c);
  return conditions.map((c) => {
    const old = before.get(c.type);
    // Like the kubelet: the transition time moves only when the status flips.
    const since = old && old.status === c.status ? old.lastTransitionTime as string : now;
    const out: JsonObject = { type: c.type, status: c.status, lastProbeTime: null };
    out.lastTransitionTime = since;
    if (c.reason) out.reason = c.reason;
    if (c.message) out.message = c.message;
    if (old && sameCondition(old, out)) return old;
    return out;
  });
}

function sameCondition(a: JsonObject, b: JsonObject): boolean {
  return a.status === b.status && a.reason === b.reason && a.message === b.message &&
    a.lastTransitionTime === b.lastTransitionTime;
}

function byName(a: JsonObject, b: JsonObject): number {
  const x = a.name as string;
  const y = b.name as string;
  return x < y ? -1 : x > y ? 1 : 0;
}

/**
 * Builds `status` for a pod. A terminal phase never changes and a Running
 * pod never goes back to Pending, as the kubelet's status manager enforces.
 *
 * @param options Restart policy, runtime view, previous status, time, host IP, QoS.
 * @returns The status in its JSON shape.
 */
export function deriveStatus(options: DeriveStatusOptions): JsonObject {
  const { runtime, prev } = options;
  let phase = phaseOf(options.restartPolicy, runtime.initStatuses, runtime.statuses);
  const prevPhase = prev?.phase;
  if (isTerminalPhase(prevPhase)) phase = prevPhase as PodPhase;
  else if (prevPhase === POD_PHASE.running && phase === POD_PHASE.pending) {
    phase = POD_PHASE.running;
  }
  const status: JsonObject = {
    phase,
    conditions: withTransitionTimes(conditionsOf(options, phase), prev, rfc3339(options.nowMs)),
    hostIP: options.hostIP,
    hostIPs: [{ ip: options.hostIP }],
  };
  if (runtime.podIP) {
    status.podIP = runtime.podIP;
    status.podIPs = [{ ip: runtime.podIP }];
  }
  status.startTime = rfc3339(runtime.startTimeMs);
  if (runtime.initStatuses.length > 0) status.initContainerStatuses = [...runtime.initStatuses];
  status.containerStatuses = [...runtime.statuses].sort(byName);
  status.qosClass = options.qosClass;
  return status;
}
