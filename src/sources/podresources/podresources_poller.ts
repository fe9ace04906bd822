/**
 * The podresources loop: `List` at the relist period and
 * `GetAllocatableResources` at start and every minute, handed to a sink. The
 * kubelet allows every client on the node together 100 calls/s with a burst
 * of 10 and has no per-client share, so this loop spends at most a tenth of
 * that (one `List` per 100 ms at the shortest period) and, when the kubelet
 * answers RESOURCE_EXHAUSTED, backs off (doubling to 30 s, jittered) instead
 * of adding to the crowd. A failed call keeps what the sink already has.
 *
 * With the default endpoint the API is optional: while its socket file is
 * absent nothing is called and nothing counts as an error (the feature is
 * simply off); the file is looked for again every minute.
 *
 * @module
 */

import { Backoff } from "../../backoff.ts";
import type { Clock } from "../../clock.ts";
import { goCodeName, GrpcError, STATUS } from "../../grpc/status.ts";
import type { Logger } from "../../log.ts";
import type { Metrics } from "../../metrics/metrics.ts";
import type { AllocatableResources, PodResources } from "../../model/pod_resources.ts";
import { abortableSleep, type Sleep } from "../../sleep.ts";
import type { PodResourcesApi } from "./client.ts";

/** Shortest wait between two `List` calls: 10 per second, a tenth of the kubelet's budget. */
export const MIN_POLL_PERIOD_MS = 100;
/** How often `GetAllocatableResources` is called, and an absent socket looked for. */
export const ALLOCATABLE_PERIOD_MS = 60_000;
/** First wait after RESOURCE_EXHAUSTED. */
const BACKOFF_START_MS = 1_000;
/** Longest wait after repeated failures. */
const BACKOFF_MAX_MS = 30_000;

/** Where the loop's results go. */
export interface PodResourcesSink {
  /** A successful `List`: every active pod's resources, as the kubelet sent them. */
  resources(pods: readonly PodResources[]): void;
  /** A successful `GetAllocatableResources`. */
  allocatable(resources: AllocatableResources): void;
  /**
   * Whether the kubelet's API answers: `false` with a reason when it is
   * absent or failing (what the sink holds stays as it was).
   */
  availability(available: boolean, reason: string): void;
}

/** Options of {@linkcode PodResourcesPoller}. */
export interface PodResourcesPollerOptions {
  api: PodResourcesApi;
  sink: PodResourcesSink;
  clock: Clock;
  metrics: Metrics;
  log: Logger;
  /** Wait between `List` calls, ms (raised to {@linkcode MIN_POLL_PERIOD_MS}). */
  periodMs: number;
  /**
   * The socket file: when given, its absence means "the feature is off"
   * (the default endpoint), not a failure.
   */
  optionalSocket?: string;
  /** Deadline of one call, ms. @default {10000} */
  timeoutMs?: number;
  /** Waits `ms` or until the signal aborts; tests inject their own. @default {a timer} */
  sleep?: Sleep;
  /** Returns [0, 1): the backoff's jitter. @default {Math.random} */
  random?: () => number;
  /** Whether a path exists (tests inject their own). @default {Deno.stat} */
  exists?: (path: string) => Promise<boolean>;
}

/** What one {@linkcode PodResourcesPoller.pollOnce} did. */
export type PollOutcome =
  /** `List` answered (and `GetAllocatableResources` when it was due). */
  | "ok"
  /** The socket file is absent and the API optional: nothing was called. */
  | "absent"
  /** The kubelet refused a call with RESOURCE_EXHAUSTED. */
  | "rate_limited"
  /** Another failure. */
  | "failed";

/** The result of one poll: what happened and how long to wait before the next. */
export interface PollResult {
  readonly outcome: PollOutcome;
  readonly nextDelayMs: number;
}

type Call = "list" | "get_allocatable";

function reasonOf(err: unknown): string {
  if (!(err instanceof GrpcError)) return "error";
  switch (err.code) {
    case STATUS.RESOURCE_EXHAUSTED:
      return "rate_limited";
    case STATUS.UNAVAILABLE:
      return "unavailable";
    case STATUS.DEADLINE_EXCEEDED:
      return "deadline";
    case STATUS.INTERNAL:
      return "internal";
    default:
      return goCodeName(err.code);
  }
}

async function statExists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

/** Polls the kubelet's podresources API and feeds a sink. */
export class PodResourcesPoller {
  readonly #o: PodResourcesPollerOptions;
  readonly #period: number;
  /** Failed polls since the last success, and the wait after each. */
  readonly #backoff: Backoff;
  #allocatableAt: number | undefined;
  #available: boolean | undefined;
  #reason = "";

  /** @param options API, sink, clock, metrics, log and period. */
  constructor(options: PodResourcesPollerOptions) {
    this.#o = options;
    this.#period = Math.max(MIN_POLL_PERIOD_MS, options.periodMs);
    // Doubling from 1 s (or the period, if longer) to 30 s, jittered by up
    // to a fifth either way so that agents refused together do not come
    // back together.
    this.#backoff = new Backoff({
      initialMs: Math.min(BACKOFF_MAX_MS, Math.max(BACKOFF_START_MS, this.#period)),
      maxMs: BACKOFF_MAX_MS,
      jitter: 0.2,
      centered: true,
      ...(options.random === undefined ? {} : { random: options.random }),
    });
  }

  /** `true` while the last call answered; `undefined` before the first poll. */
  get available(): boolean | undefined {
    return this.#available;
  }

  /** Why the API is not available (empty while it is). */
  get reason(): string {
    return this.#reason;
  }

  /**
   * One round: `List`, then `GetAllocatableResources` when it is due (never
   * fetched, or a minute since the last answer).
   *
   * @param signal Cancels the calls.
   * @returns What happened and the wait before the next round.
   */
  async pollOnce(signal: AbortSignal): Promise<PollResult> {
    const { optionalSocket } = this.#o;
    if (optionalSocket !== undefined && !await (this.#o.exists ?? statExists)(optionalSocket)) {
      this.#setAvailable(false, `no podresources socket at ${optionalSocket}`);
      this.#backoff.reset();
      return { outcome: "absent", nextDelayMs: ALLOCATABLE_PERIOD_MS };
    }
    try {
      const pods = await this.#call("list", () => this.#o.api.list(this.#callOptions(signal)));
      this.#o.sink.resources(pods);
      const now = this.#o.clock.now();
      if (this.#allocatableAt === undefined || now - this.#allocatableAt >= ALLOCATABLE_PERIOD_MS) {
        const allocatable = await this.#call(
          "get_allocatable",
          () => this.#o.api.getAllocatableResources(this.#callOptions(signal)),
        );
        this.#allocatableAt = now;
        this.#o.sink.allocatable(allocatable);
      }
    } catch (err) {
      if (signal.aborted) return { outcome: "failed", nextDelayMs: 0 };
      return this.#failed(err);
    }
    this.#backoff.reset();
    this.#setAvailable(true, "");
    return { outcome: "ok", nextDelayMs: this.#period };
  }

  /**
   * Polls until `signal` aborts.
   *
   * @param signal Stops the loop.
   * @returns Resolves once stopped.
   */
  async run(signal: AbortSignal): Promise<void> {
    const sleep = this.#o.sleep ?? abortableSleep;
    while (!signal.aborted) {
      const { nextDelayMs } = await this.pollOnce(signal);
      await sleep(nextDelayMs, signal);
    }
  }

  #callOptions(signal: AbortSignal) {
    return { signal, timeoutMs: this.#o.timeoutMs ?? 10_000 };
  }

  async #call<T>(call: Call, fn: () => Promise<T>): Promise<T> {
    this.#o.metrics.podResourcesPolls.inc({ call });
    try {
      return await fn();
    } catch (err) {
      this.#o.metrics.podResourcesErrors.inc({ call, reason: reasonOf(err) });
      throw err;
    }
  }

  #failed(err: unknown): PollResult {
    const reason = reasonOf(err);
    const nextDelayMs = this.#backoff.next();
    const failures = this.#backoff.attempts;
    const message = (err as Error).message ?? String(err);
    if (failures === 1 || failures % 10 === 0) {
      this.#o.log.warn("podresources call failed; keeping the last allocations", {
        reason,
        error: message,
        failures,
        retryInMs: nextDelayMs,
      });
    }
    if (reason === "rate_limited") {
      // The kubelet answered: it is there, only busy.
      return { outcome: "rate_limited", nextDelayMs };
    }
    this.#setAvailable(false, `podresources call failed: ${message}`);
    return { outcome: "failed", nextDelayMs };
  }

  #setAvailable(available: boolean, reason: string): void {
    const changed = this.#available !== available;
    this.#available = available;
    this.#reason = reason;
    this.#o.metrics.podResourcesAvailable.set(available ? 1 : 0);
    if (changed) {
      if (available) this.#o.log.info("podresources API answering: devices joined onto pods");
      else this.#o.log.info("podresources API not available", { reason });
    }
    this.#o.sink.availability(available, reason);
  }
}
