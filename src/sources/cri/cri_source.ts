/**
 * The CRI pod source: reads the node's pods from the container runtime the
 * way the kubelet's generic PLEG does. Each {@linkcode CriPodSource.list}
 * lists sandboxes and containers (two calls), inspects only what is new,
 * changed, last told by an event or not read last time, then rebuilds only the
 * pods whose inputs changed. An unchanged pod is returned as the very same
 * {@linkcode PodSnapshot} object, so the cache can skip it by identity: the
 * work grows with what changed, not with the node.
 *
 * Between lists, a runtime event that carries its pod's statuses (containerd
 * 1.7+, CRI-O) is taken into the view at once, as the kubelet's evented PLEG
 * takes it into its pod cache, and the new view is handed to the poller
 * ({@linkcode CriPodSource.watchChanges}): each change reaches watchers
 * apart, without a list. The state and its rules live
 * in {@linkcode CriState}; each list replaces it with what it read.
 *
 * @module
 */

import { Backoff } from "../../backoff.ts";
import { type Clock, systemClock } from "../../clock.ts";
import type { Logger } from "../../log.ts";
import { silentLogger } from "../../log.ts";
import type { Metrics } from "../../metrics/metrics.ts";
import type { PodSnapshot } from "../../model/pod.ts";
import { abortableSleep } from "../../sleep.ts";
import { type PolledSource, type SourceChanges, SourceUnavailableError } from "../mod.ts";
import { containerIdScheme, type RejectReason, UNNAMED_RUNTIME } from "./convert.ts";
import { CriState, type Inspection, type InspectPlan } from "./cri_state.ts";
import {
  type ContainerProcess,
  type ContainerProcessSource,
  parseContainerInfo,
  type RunningContainerProcess,
} from "../process/mod.ts";
import {
  type ContainerEventResponse,
  type ContainerStatus,
  CRI_STATUS,
  CriCallError,
  type CriCallOptions,
  type PodSandboxStatus,
  type RuntimeReader,
  type RuntimeService,
} from "./_types.ts";

/**
 * Default deadline of each CRI call one `list()` makes, in milliseconds:
 * a runtime that hangs must not stall the relist loop for the full
 * `--runtime-request-timeout`.
 */
export const DEFAULT_LIST_CALL_TIMEOUT_MS = 10_000;

/** Default number of status inspections in flight at once. */
export const DEFAULT_INSPECT_CONCURRENCY = 8;

/** Options of {@linkcode CriPodSource}. */
export interface CriPodSourceOptions {
  /** The runtime: a {@linkcode CriClient}, or an in-process fake. */
  runtime: RuntimeReader & Partial<Pick<RuntimeService, "version">>;
  /** `spec.nodeName` of every pod (the kubelet's `--hostname-override`). */
  nodeName?: string;
  /** The node's IPs, for `status.hostIP(s)` and host-network pods. */
  hostIPs?: readonly string[];
  /**
   * Container ID prefix (`containerd`, `cri-o`): the runtime name from its
   * Version. When omitted, the first list asks the runtime; a runtime that
   * gives no name (or has no Version) gets {@linkcode UNNAMED_RUNTIME}.
   */
  runtimeName?: string;
  /**
   * Deadline of each call a list makes, in milliseconds. Shorter than the
   * kubelet's 2-minute `--runtime-request-timeout` on purpose: a list runs
   * every second, and a runtime that cannot list its pods in 10 s is better
   * reported unavailable (the cache keeps the last known pods) than waited on.
   * @default {10000}
   */
  callTimeoutMs?: number;
  /** Status inspections in flight at once. @default {8} */
  inspectConcurrency?: number;
  /** `runtimeReachable`, `sourceItemsRejected`, `runtimeEvents` and `runtimeProcessReads` are updated. */
  metrics?: Pick<
    Metrics,
    "runtimeReachable" | "sourceItemsRejected" | "runtimeEvents" | "runtimeProcessReads"
  >;
  log?: Logger;
  /**
   * The wall clock the runtime stamps its events with: what a list read
   * was observed between its start and end on it, and an event moves a
   * record only when stamped after that (see {@linkcode CriState}).
   * @default {systemClock}
   */
  clock?: Pick<Clock, "now">;
}

/** Failure reasons that mean the runtime did not answer. */
const NO_ANSWER_REASONS: ReadonlySet<string> = new Set(["unavailable", "timeout", "cancelled"]);

/** The metric label of this source. */
const SOURCE = "cri";

/** The clock's resolution: a list's end is known to this much. */
const NS_PER_MS = 1e6;

const NO_PROCESSES: readonly RunningContainerProcess[] = Object.freeze([]);

/**
 * Reads pods from a CRI runtime into its {@linkcode CriState}. Reads never
 * overlap (the relister runs one at a time); an event that arrives while one
 * reads is taken in right after it is applied, against what it read.
 *
 * @example Usage
 * ```ts ignore
 * import { CriClient } from "./client.ts";
 * import { CriPodSource } from "./cri_source.ts";
 * using client = new CriClient("unix:///run/containerd/containerd.sock");
 * const source = new CriPodSource({ runtime: client, nodeName: "node-1" });
 * const pods = await source.list(AbortSignal.timeout(30_000));
 * ```
 */
export class CriPodSource implements PolledSource, ContainerProcessSource {
  /** Always `"cri"`. */
  readonly kind = "cri" as const;
  /** Itself: the runtime's source is the one that knows its containers' processes. */
  readonly processes: ContainerProcessSource = this;
  readonly #runtime: CriPodSourceOptions["runtime"];
  readonly #options: CriPodSourceOptions;
  readonly #log: Logger;
  readonly #callTimeoutMs: number;
  readonly #concurrency: number;
  readonly #clock: Pick<Clock, "now">;
  #runtimeName: string | undefined;
  /** Made at the first list, once the runtime's name is known. */
  #state: CriState | undefined;
  /** Reads in progress. */
  #reading = 0;
  /** Events that arrived while a read was in progress, oldest first. */
  #arrived: ContainerEventResponse[] = [];
  /** Where what events say goes: set by `watchChanges`. */
  #changes: SourceChanges | undefined;
  /** Ends the process reads events start: the event subscription's signal. */
  #eventSignal: AbortSignal | undefined;
  /** Containers whose process is being read for an event. */
  #readingProcess = new Set<string>();

  /**
   * @param options The runtime, node facts, deadlines, metrics and logger.
   */
  constructor(options: CriPodSourceOptions) {
    this.#runtime = options.runtime;
    this.#options = options;
    this.#log = options.log ?? silentLogger;
    this.#callTimeoutMs = options.callTimeoutMs ?? DEFAULT_LIST_CALL_TIMEOUT_MS;
    this.#concurrency = Math.max(1, options.inspectConcurrency ?? DEFAULT_INSPECT_CONCURRENCY);
    this.#clock = options.clock ?? systemClock;
    this.#runtimeName = options.runtimeName;
  }

  /**
   * Lists the runtime's pods: one snapshot per pod UID, built from what this
   * read found (see {@linkcode CriState.applyList}). Snapshots of pods whose
   * runtime data did not change are the same objects as last time.
   *
   * @param signal Aborts the list.
   * @returns Every pod the runtime holds.
   * @throws {SourceUnavailableError} When the runtime cannot be read; `reason`
   * is `unavailable`, `timeout`, `cancelled`, `unimplemented` or `runtime_error`.
   */
  async list(signal: AbortSignal): Promise<readonly PodSnapshot[]> {
    this.#reading++;
    try {
      const result = await this.#listOnce(signal);
      this.#options.metrics?.runtimeReachable.set(1);
      return result;
    } catch (err) {
      const error = toSourceError(err, signal);
      // A call the runtime answered, even with an error, proves it reachable;
      // no answer in time (or a list cut short) does not.
      const reachable = !NO_ANSWER_REASONS.has(error.reason);
      this.#options.metrics?.runtimeReachable.set(reachable ? 1 : 0);
      throw error;
    } finally {
      this.#reading--;
      // After the view this read returns: events handed on after it.
      if (this.#reading === 0 && this.#arrived.length > 0) {
        queueMicrotask(() => this.#takeArrived());
      }
    }
  }

  async #listOnce(signal: AbortSignal): Promise<readonly PodSnapshot[]> {
    signal.throwIfAborted();
    const fromNs = this.#nowNs();
    const call = (): CriCallOptions => ({ signal, timeoutMs: this.#callTimeoutMs });
    if (this.#runtimeName === undefined) this.#runtimeName = await this.#askRuntimeName(call());
    const state = this.#state ??= new CriState({
      nodeName: this.#options.nodeName,
      hostIPs: this.#options.hostIPs,
      runtimeName: this.#runtimeName,
      onReject: (reason, detail) => this.#reject(reason, detail),
    });
    // The items of settled records that the runtime lists unchanged are
    // kept as they are: the client need not decode them again.
    const [sandboxList, containerList] = await Promise.all([
      this.#runtime.listPodSandbox({}, {
        ...call(),
        reuse: (id, st, createdAt) => state.settledSandbox(id, st, createdAt),
      }),
      this.#runtime.listContainers({}, {
        ...call(),
        reuse: (id, st, createdAt) => state.settledContainer(id, st, createdAt),
      }),
    ]);
    const sandboxes = sandboxList.items ?? [];
    const containers = containerList.containers ?? [];
    const plan = state.toInspect(sandboxes, containers);
    const sandboxStatuses = new Map<string, Inspection<PodSandboxStatus>>();
    const containerStatuses = new Map<string, Inspection<ContainerStatus>>();
    const containerProcesses = new Map<string, ContainerProcess>();
    await this.#inspectAll(plan, sandboxStatuses, containerStatuses, containerProcesses, signal);
    // A list given up on is not applied: the next one builds on the last used.
    signal.throwIfAborted();
    state.applyList(
      { sandboxes, containers, sandboxStatuses, containerStatuses, containerProcesses },
      { fromNs, toNs: this.#nowNs() + NS_PER_MS },
    );
    return state.view();
  }

  #nowNs(): number {
    return this.#clock.now() * 1e6;
  }

  /**
   * The running containers and their init processes (process lookups).
   *
   * @returns The same array while the state is unchanged.
   */
  containerProcesses(): readonly RunningContainerProcess[] {
    return this.#state?.containerProcesses() ?? NO_PROCESSES;
  }

  async #askRuntimeName(options: CriCallOptions): Promise<string> {
    if (this.#runtime.version === undefined) return UNNAMED_RUNTIME;
    const version = await this.#runtime.version({ version: "v1" }, options);
    return containerIdScheme(version.runtimeName);
  }

  #reject(reason: RejectReason, detail: string): void {
    this.#options.metrics?.sourceItemsRejected.inc({ source: SOURCE, reason });
    this.#log.warn("skipped invalid runtime data", { reason, detail });
  }

  /**
   * Inspects what `plan` names, `concurrency` calls at a time, into the
   * maps. On the first error that fails the list (the runtime unreachable),
   * no further call starts, and it rejects only once the calls in flight
   * have ended: a failed list leaves nothing running.
   */
  async #inspectAll(
    plan: InspectPlan,
    sandboxStatuses: Map<string, Inspection<PodSandboxStatus>>,
    containerStatuses: Map<string, Inspection<ContainerStatus>>,
    containerProcesses: Map<string, ContainerProcess>,
    signal: AbortSignal,
  ): Promise<void> {
    const options = { signal, timeoutMs: this.#callTimeoutMs };
    const jobs: (() => Promise<void>)[] = [];
    for (const id of plan.sandboxIds) {
      jobs.push(async () => {
        const got = await this.#inspect(
          () => this.#runtime.podSandboxStatus({ podSandboxId: id }, options),
          id,
        );
        sandboxStatuses.set(id, typeof got === "string" ? got : got.status ?? "failed");
      });
    }
    for (const id of plan.containerIds) {
      jobs.push(async () => {
        const got = await this.#inspect(
          // verbose: the init PID and cgroup (process lookups); only new or changed containers.
          () => this.#runtime.containerStatus({ containerId: id, verbose: true }, options),
          id,
        );
        containerStatuses.set(id, typeof got === "string" ? got : got.status ?? "failed");
        const process = typeof got === "string" ? undefined : parseContainerInfo(got.info);
        if (process !== undefined) containerProcesses.set(id, process);
      });
    }
    let next = 0;
    let failure: { error: unknown } | undefined;
    const worker = async () => {
      while (failure === undefined && next < jobs.length) {
        try {
          await jobs[next++]!();
        } catch (error) {
          failure ??= { error };
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.#concurrency, jobs.length) }, worker));
    if (failure !== undefined) throw failure.error;
  }

  /**
   * Runs one inspection. `gone`: the item vanished since the list (dropped
   * now, seen again if still listed). `failed`: any other per-item error (the
   * item is inspected again next time). An error that means the runtime
   * itself is unreachable fails the whole list.
   */
  async #inspect<T>(fn: () => Promise<T>, id: string): Promise<T | "gone" | "failed"> {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof CriCallError) || isRuntimeDown(err.code)) throw err;
      if (err.code === CRI_STATUS.notFound) return "gone";
      this.#log.debug("runtime status call failed; retrying at next relist", {
        id,
        method: err.method,
        error: err,
      });
      return "failed";
    }
  }

  /** Takes one event in, or holds it while a read is in progress. */
  #take(event: ContainerEventResponse): void {
    if (this.#reading > 0) {
      this.#arrived.push(event);
      return;
    }
    const state = this.#state;
    const before = state?.view();
    const outcome = state?.applyEvent(event) ?? "relist";
    this.#options.metrics?.runtimeEvents.inc({ outcome });
    const view = state?.view();
    if (view !== undefined && view !== before) this.#changes?.view(view);
    if (outcome === "relist") this.#changes?.relist();
    if (state !== undefined) this.#readProcessesOf(event, state);
  }

  /**
   * Reads at once the init process of each container an event showed
   * running that has none yet (one verbose `ContainerStatus` each), so
   * process lookups find it before the next relist. A failed read is left
   * to that relist, which inspects every container an event made.
   */
  #readProcessesOf(event: ContainerEventResponse, state: CriState): void {
    const signal = this.#eventSignal;
    if (signal === undefined || signal.aborted) return;
    const reads = this.#options.metrics?.runtimeProcessReads;
    for (const { id } of event.containersStatuses) {
      if (this.#readingProcess.has(id) || !state.wantsProcess(id)) continue;
      this.#readingProcess.add(id);
      this.#runtime.containerStatus(
        { containerId: id, verbose: true },
        { signal, timeoutMs: this.#callTimeoutMs },
      ).then((got) => {
        const process = parseContainerInfo(got.info);
        const taken = process !== undefined && state.takeProcess(id, process);
        reads?.inc({ outcome: taken ? "taken" : "none" });
      }, (error) => {
        reads?.inc({ outcome: "failed" });
        this.#log.debug("reading a started container's process failed; the next relist reads it", {
          id,
          error,
        });
      }).finally(() => this.#readingProcess.delete(id));
    }
  }

  /** Takes in the events that arrived during the reads just ended. */
  #takeArrived(): void {
    if (this.#reading > 0) return;
    const arrived = this.#arrived;
    this.#arrived = [];
    for (const event of arrived) this.#take(event);
  }

  /**
   * Subscribes to the runtime's container events. Each is taken into the
   * view if it can be ({@linkcode CriState.applyEvent}): the view is handed
   * to `changes` when that changed it; an event the last list already
   * covered tells nothing; any other asks `changes` for a relist. On
   * UNIMPLEMENTED (containerd 1.6) it logs once at info and returns; when
   * the stream ends or fails otherwise it asks for a relist (events may be
   * lost meanwhile) and resubscribes with backoff (250 ms doubling to 30 s).
   *
   * @param signal Stops the subscription.
   * @param changes Told each view an event changed, in order, and each event left to a relist.
   * @returns Resolves when `signal` aborts or the runtime has no events.
   */
  async watchChanges(signal: AbortSignal, changes: SourceChanges): Promise<void> {
    const resubscribe = new Backoff({ initialMs: 250, maxMs: 30_000, jitter: 0 });
    this.#eventSignal = signal;
    this.#changes = {
      relist: () => {
        if (!signal.aborted) changes.relist();
      },
      view: (view) => {
        if (!signal.aborted) changes.view(view);
      },
    };
    while (!signal.aborted) {
      let failure: unknown;
      try {
        for await (const event of this.#runtime.getContainerEvents({}, { signal })) {
          resubscribe.reset();
          if (!signal.aborted) this.#take(event);
        }
        if (signal.aborted) return;
      } catch (err) {
        if (signal.aborted) return;
        if (err instanceof CriCallError && err.code === CRI_STATUS.unimplemented) {
          this.#log.info(
            "runtime does not implement GetContainerEvents; relying on periodic relist",
          );
          return;
        }
        failure = err;
      }
      const backoffMs = resubscribe.next();
      const ended = failure === undefined ? "ended" : "failed";
      this.#log.debug(`container event stream ${ended}; resubscribing`, {
        backoffMs,
        error: failure,
      });
      // Events may be lost until the stream is back: a relist reads what they said.
      changes.relist();
      await abortableSleep(backoffMs, signal);
    }
  }
}

function isRuntimeDown(code: number): boolean {
  return code === CRI_STATUS.unavailable || code === CRI_STATUS.deadlineExceeded ||
    code === CRI_STATUS.cancelled;
}

const REASON_BY_CODE: ReadonlyMap<number, string> = new Map([
  [CRI_STATUS.unavailable, "unavailable"],
  [CRI_STATUS.deadlineExceeded, "timeout"],
  [CRI_STATUS.cancelled, "cancelled"],
  [CRI_STATUS.unimplemented, "unimplemented"],
]);

function toSourceError(err: unknown, signal: AbortSignal): SourceUnavailableError {
  if (err instanceof SourceUnavailableError) return err;
  if (signal.aborted) {
    return new SourceUnavailableError("CRI list was aborted", {
      reason: "cancelled",
      cause: signal.reason,
    });
  }
  if (err instanceof CriCallError) {
    return new SourceUnavailableError(`CRI call "${err.method}" failed: ${err.message}`, {
      reason: REASON_BY_CODE.get(err.code) ?? "runtime_error",
      cause: err,
    });
  }
  return new SourceUnavailableError(`CRI list failed: ${String(err)}`, {
    reason: "runtime_error",
    cause: err,
  });
}
