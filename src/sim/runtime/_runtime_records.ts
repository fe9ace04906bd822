/**
 * What the simulated CRI runtime stores of a sandbox and a container, and
 * how it answers for them: the `PodSandbox`, `PodSandboxStatus`, `Container`
 * and `ContainerStatus` views a real runtime would send, each a fresh copy.
 *
 * @module
 */

import { CONTAINER_STATE, CRI_STATUS, CriCallError } from "../../sources/cri/mod.ts";
import type {
  Container,
  ContainerEventResponse,
  ContainerStatus,
  PodSandbox,
  PodSandboxStatus,
  StringMap,
} from "../../sources/cri/mod.ts";

/** A sandbox as the simulated runtime stores it (tests may tamper with it). */
export interface SimSandbox {
  id: string;
  name: string;
  uid: string;
  namespace: string;
  attempt: number;
  state: number;
  createdAt: number;
  labels: StringMap;
  annotations: StringMap;
  runtimeHandler: string;
  ip: string;
  additionalIps: string[];
  network: number;
  pid: number;
  ipc: number;
}

/** A container as the simulated runtime stores it (tests may tamper with it). */
export interface SimContainer {
  id: string;
  sandboxId: string;
  name: string;
  attempt: number;
  image: string;
  imageRef: string;
  state: number;
  createdAt: number;
  startedAt: number;
  finishedAt: number;
  exitCode: number;
  reason: string;
  message: string;
  labels: StringMap;
  annotations: StringMap;
  logPath: string;
  memoryLimitBytes: number;
  /** Its init process' host PID from its start on (0 before). */
  pid: number;
}

/** A hex string of `length` digits hashed from `text` (FNV-1a, reseeded per 8 digits). */
export function fnvHex(text: string, length: number): string {
  let out = "";
  let seed = 0x811c9dc5;
  while (out.length < length) {
    let h = seed;
    for (let i = 0; i < text.length; i++) {
      h ^= text.charCodeAt(i);
      h = Math.imul(h, 0x01000193) >>> 0;
    }
    out += h.toString(16).padStart(8, "0");
    seed = (seed + 0x9e3779b9) >>> 0;
  }
  return out.slice(0, length);
}

/** Whether `labels` carry every pair of a CRI label selector. */
export function matches(
  labels: StringMap,
  selector: Readonly<Record<string, unknown>> | null | undefined,
): boolean {
  if (!selector) return true;
  for (const [k, v] of Object.entries(selector)) if (labels[k] !== v) return false;
  return true;
}

/** The string entries of a map, copied. */
export function copyMap(map: Readonly<Record<string, unknown>> | null | undefined): StringMap {
  const out: StringMap = {};
  for (const [k, v] of Object.entries(map ?? {})) if (typeof v === "string") out[k] = v;
  return out;
}

/** The `PodSandbox` a list answers for a stored sandbox. */
export function sandboxOf(s: SimSandbox): PodSandbox {
  return {
    id: s.id,
    metadata: { name: s.name, uid: s.uid, namespace: s.namespace, attempt: s.attempt },
    state: s.state,
    createdAt: s.createdAt,
    labels: { ...s.labels },
    annotations: { ...s.annotations },
    runtimeHandler: s.runtimeHandler,
  };
}

/** The `PodSandboxStatus` of a stored sandbox. */
export function sandboxStatusOf(s: SimSandbox): PodSandboxStatus {
  return {
    id: s.id,
    metadata: { name: s.name, uid: s.uid, namespace: s.namespace, attempt: s.attempt },
    state: s.state,
    createdAt: s.createdAt,
    network: { ip: s.ip, additionalIps: s.additionalIps.map((ip) => ({ ip })) },
    linux: { namespaces: { options: { network: s.network, pid: s.pid, ipc: s.ipc } } },
    labels: { ...s.labels },
    annotations: { ...s.annotations },
    runtimeHandler: s.runtimeHandler,
  };
}

/** The `Container` a list answers for a stored container. */
export function containerOf(c: SimContainer): Container {
  return {
    id: c.id,
    podSandboxId: c.sandboxId,
    metadata: { name: c.name, attempt: c.attempt },
    image: { image: c.image, userSpecifiedImage: "" },
    imageRef: c.imageRef,
    state: c.state,
    createdAt: c.createdAt,
    labels: { ...c.labels },
    annotations: { ...c.annotations },
    imageId: "",
  };
}

/** The `ContainerStatus` of a stored container. */
export function containerStatusOf(c: SimContainer): ContainerStatus {
  return {
    id: c.id,
    metadata: { name: c.name, attempt: c.attempt },
    state: c.state,
    createdAt: c.createdAt,
    startedAt: c.startedAt,
    finishedAt: c.finishedAt,
    exitCode: c.exitCode,
    image: { image: c.image, userSpecifiedImage: "" },
    imageRef: c.imageRef,
    reason: c.reason,
    message: c.message,
    labels: { ...c.labels },
    annotations: { ...c.annotations },
    logPath: c.logPath,
    imageId: "",
  };
}

/**
 * The cgroup directory of a simulated container, as the cgroupfs driver
 * names a best-effort pod's: `/kubepods/besteffort/pod<UID>/<ID>`.
 *
 * @param podUid The sandbox's pod UID.
 * @param containerId The container ID.
 * @returns The path below the cgroup root.
 */
export function simCgroupDir(podUid: string, containerId: string): string {
  return `/kubepods/besteffort/pod${podUid}/${containerId}`;
}

/**
 * The verbose `ContainerStatus` `info` of a stored container, shaped as
 * containerd's: its init PID (0 unless running) and the runtime spec's
 * `linux.cgroupsPath`.
 *
 * @param c The container.
 * @param podUid Its sandbox's pod UID.
 * @returns The `info` map.
 */
export function containerInfoOf(c: SimContainer, podUid: string): Record<string, string> {
  const pid = c.state === CONTAINER_STATE.running ? c.pid : 0;
  const spec = { linux: { cgroupsPath: simCgroupDir(podUid, c.id) } };
  return { info: JSON.stringify({ pid, runtimeSpec: spec }) };
}

/**
 * The runtime's container events, fanned out to every open subscription in
 * the order they were emitted. The first subscription is handed the event
 * itself, every other one a copy, so no two callers share an object.
 */
export class ContainerEventFeed {
  readonly #listeners = new Set<(event: ContainerEventResponse) => void>();

  /** Open subscriptions. */
  get subscribers(): number {
    return this.#listeners.size;
  }

  /** @param event Passed to every subscription. */
  emit(event: ContainerEventResponse): void {
    let first = true;
    for (const listener of this.#listeners) {
      listener(first ? event : structuredClone(event));
      first = false;
    }
  }

  /**
   * The events from now on, until `signal` aborts.
   *
   * @param signal Ends the subscription.
   * @returns The events, in order.
   */
  async *subscribe(signal: AbortSignal): AsyncGenerator<ContainerEventResponse> {
    const queue: ContainerEventResponse[] = [];
    let wake: (() => void) | undefined;
    const listener = (event: ContainerEventResponse) => {
      queue.push(event);
      wake?.();
    };
    const onAbort = () => wake?.();
    this.#listeners.add(listener);
    signal.addEventListener("abort", onAbort);
    try {
      while (!signal.aborted) {
        const event = queue.shift();
        if (event === undefined) {
          await new Promise<void>((resolve) => wake = resolve);
          wake = undefined;
          continue;
        }
        yield event;
      }
    } finally {
      this.#listeners.delete(listener);
      signal.removeEventListener("abort", onAbort);
    }
  }
}

/**
 * A stored record, or the NOT_FOUND a runtime answers (in containerd's words).
 *
 * @param record The record, if stored.
 * @param kind `sandbox` or `container`.
 * @param id The ID asked for.
 * @param method The CRI method, for the error.
 * @returns The record.
 * @throws {CriCallError} NOT_FOUND when there is none.
 */
export function found<T>(record: T | undefined, kind: string, id: string, method: string): T {
  if (record !== undefined) return record;
  throw new CriCallError(`an error occurred when try to find ${kind} "${id}": not found`, {
    code: CRI_STATUS.notFound,
    method,
  });
}
