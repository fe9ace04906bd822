/**
 * The simulated CRI runtime's records and what changes them in one place:
 * its sandboxes and containers, their IDs and times (strictly increasing
 * nanoseconds on the injected clock), pod IPs, the stop transitions, and
 * the container events with the statuses containerd puts in them (held
 * while {@linkcode SimCriRuntime.holdEventStatuses} runs). `SimCriRuntime`
 * serves `RuntimeService` and its test controls over this state.
 *
 * @module
 */

import type { Clock } from "../../clock.ts";
import {
  CONTAINER_EVENT_TYPE,
  CONTAINER_STATE,
  type ContainerEventResponse,
  CRI_STATUS,
  CriCallError,
  POD_SANDBOX_STATE,
} from "../../sources/cri/mod.ts";
import type { IpPool } from "../_ip_pool.ts";
import {
  ContainerEventFeed,
  containerStatusOf,
  fnvHex,
  found,
  sandboxStatusOf,
  type SimContainer,
  type SimSandbox,
} from "./_runtime_records.ts";

/** Exit code of a container stopped by StopContainer or with its sandbox (SIGKILL). */
export const KILLED_EXIT_CODE = 137;

/** Options of {@linkcode SimRuntimeState}. */
export interface SimRuntimeStateOptions {
  /** Source of creation, start and finish times. */
  clock: Clock;
  /** Where pod IPs come from. */
  ips: IpPool;
  /** Whether events carry the statuses of their sandbox and its containers. */
  eventStatuses: boolean;
}

/** The records of one simulated runtime; only `SimCriRuntime` holds one. */
export class SimRuntimeState {
  /** Whether events carry the statuses of their sandbox and its containers. */
  eventStatuses: boolean;
  readonly sandboxes = new Map<string, SimSandbox>();
  readonly containers = new Map<string, SimContainer>();
  /** The GetContainerEvents subscriptions. */
  readonly events = new ContainerEventFeed();
  readonly #clock: Clock;
  readonly #ips: IpPool;
  #lastNs = 0;
  #nextId = 1;
  /** Events of an open {@linkcode SimCriRuntime.holdEventStatuses}, in order. */
  #held: { event: ContainerEventResponse; sandboxId: string }[] | undefined;

  /** @param options Clock, IP pool, statuses switch. */
  constructor(options: SimRuntimeStateOptions) {
    this.#clock = options.clock;
    this.#ips = options.ips;
    this.eventStatuses = options.eventStatuses;
  }

  /**
   * Runs `fn`, sending the events it causes when it ends (see
   * {@linkcode SimCriRuntime.holdEventStatuses}).
   *
   * @param fn The calls and controls.
   * @returns What `fn` returns.
   */
  async hold<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#held !== undefined) return await fn();
    const held: { event: ContainerEventResponse; sandboxId: string }[] = [];
    this.#held = held;
    try {
      return await fn();
    } finally {
      this.#held = undefined;
      for (const { event, sandboxId } of held) {
        this.events.emit(
          this.sandboxes.has(sandboxId) ? { ...event, ...this.statusesOf(sandboxId) } : event,
        );
      }
    }
  }

  nowNs(): number {
    const ns = Math.max(this.#clock.now() * 1e6, this.#lastNs + 1000);
    this.#lastNs = ns;
    return ns;
  }

  newId(kind: string): string {
    return fnvHex(`${kind}/${this.#nextId++}`, 64);
  }

  sandbox(id: string, method = "PodSandboxStatus"): SimSandbox {
    return found(this.sandboxes.get(id), "sandbox", id, method);
  }

  container(id: string, method = "ContainerStatus"): SimContainer {
    return found(this.containers.get(id), "container", id, method);
  }

  allocateIp(): string {
    try {
      return this.#ips.allocate();
    } catch {
      throw new CriCallError("no IP addresses left", {
        code: CRI_STATUS.internal,
        method: "RunPodSandbox",
      });
    }
  }

  releaseIp(s: SimSandbox): void {
    this.#ips.release(s.ip);
    s.ip = "";
    s.additionalIps = [];
  }

  /**
   * An event of a container (or of the sandbox itself) in sandbox
   * `sandboxId`, stamped now, with the statuses of now (the sandbox's and
   * every container's it still holds; none at all once the sandbox is gone,
   * as for its own DELETED), as containerd builds them when the change
   * happens. Within {@linkcode SimCriRuntime.holdEventStatuses}, it is sent
   * when the hold ends, with the statuses of then while the sandbox is held.
   */
  emit(containerId: string, type: number, sandboxId: string): void {
    if (this.events.subscribers === 0) return;
    const event: ContainerEventResponse = {
      containerId,
      containerEventType: type,
      createdAt: this.nowNs(),
      ...this.statusesOf(sandboxId),
    };
    if (this.#held !== undefined) this.#held.push({ event, sandboxId });
    else this.events.emit(event);
  }

  statusesOf(sandboxId: string): Pick<
    ContainerEventResponse,
    "podSandboxStatus" | "containersStatuses"
  > {
    const sandbox = this.sandboxes.get(sandboxId);
    if (!this.eventStatuses || sandbox === undefined) {
      return { podSandboxStatus: null, containersStatuses: [] };
    }
    const containersStatuses = [];
    for (const c of this.containers.values()) {
      if (c.sandboxId === sandboxId) containersStatuses.push(containerStatusOf(c));
    }
    return { podSandboxStatus: sandboxStatusOf(sandbox), containersStatuses };
  }

  stop(c: SimContainer, exitCode: number): void {
    if (c.state === CONTAINER_STATE.exited) return;
    const now = this.nowNs();
    if (c.state === CONTAINER_STATE.created) c.startedAt = 0;
    c.state = CONTAINER_STATE.exited;
    c.finishedAt = now;
    c.exitCode = exitCode;
    c.reason = exitCode === 0 ? "Completed" : "Error";
    this.emit(c.id, CONTAINER_EVENT_TYPE.stopped, c.sandboxId);
  }

  stopSandbox(s: SimSandbox): void {
    for (const c of this.containers.values()) {
      if (c.sandboxId === s.id) this.stop(c, KILLED_EXIT_CODE);
    }
    this.releaseIp(s);
    if (s.state !== POD_SANDBOX_STATE.notReady) {
      s.state = POD_SANDBOX_STATE.notReady;
      this.emit(s.id, CONTAINER_EVENT_TYPE.stopped, s.id);
    }
  }
}
