/**
 * The relist loop of one pod source, as the kubelet's PLEG relists the
 * runtime: read the full view, hand it on, wait, repeat. A failed read keeps
 * the previous state (the sink is not called), counts, logs and retries
 * with a short capped backoff.
 *
 * One source is read by one relist at a time. The loop waits for its period
 * or for a change event ({@linkcode Relister.requestRelist} marks the source
 * dirty and wakes it), whichever comes first; events that arrive during a
 * relist coalesce into one more relist. So views reach the sink in the order
 * they were read, and a read that timed out is dropped, however late the
 * source answers.
 *
 * A relist woken by a change starts no sooner than `minInterval` after the
 * start of the relist before it: under an endless storm of events the source
 * is read at most once per `minInterval` (one read covers every event of the
 * window), not back to back. The periodic relist and
 * {@linkcode Relister.relistOnce} are never held back.
 *
 * This is the poller of every polled source: it hands each view to the
 * source's {@linkcode SourceFeed}, the one sink watched sources push to.
 *
 * @module
 */

import { Backoff } from "../backoff.ts";
import type { Clock } from "../clock.ts";
import type { Logger } from "../log.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { PodSnapshot } from "../model/pod.ts";
import { type PolledSource, type SourceChanges, SourceUnavailableError } from "../sources/mod.ts";
import { SerialQueue } from "../serial_queue.ts";
import { clockSleep, type Sleep } from "../sleep.ts";
import { untilAborted } from "./_abort.ts";
import { SourceFeed, type SyncRecord } from "./source_feed.ts";
import { ViewBudget } from "./_view_budget.ts";

/**
 * The reason the loop's own waits (the read's deadline, the spacing, a
 * wake-up) are cut short with: one error, made once (as the gRPC server's
 * call-ended reason). No one reads it; aborting without one has the
 * platform build a `DOMException` and its stack trace, several times per
 * relist.
 */
const CUT_SHORT = new Error("relist wait cut short");

/**
 * The longest wait between retries of a failing source, in ms. Short on
 * purpose: a restarted runtime should be re-read within seconds.
 */
export const DEFAULT_MAX_BACKOFF = 5_000;

/** Options of {@linkcode Relister}. */
export interface RelisterOptions {
  source: PolledSource;
  /** Receives every successful full view (the daemon applies it to the cache and publishes). */
  sink: (snapshots: readonly PodSnapshot[]) => void;
  clock: Clock;
  metrics: Metrics;
  log: Logger;
  /** Wait between relists, in ms. */
  period: number;
  /** Longest time one `source.list()` may take, in ms. */
  timeout: number;
  /**
   * Shortest time from the start of one relist to the start of a relist
   * woken by a change, in ms; 0 relists at once. At most half of `period`
   * (a longer one is clamped, and logged). @default {0}
   */
  minInterval?: number;
  /** Cap of the retry backoff, in ms (never below `period`). @default {DEFAULT_MAX_BACKOFF} */
  maxBackoff?: number;
  /** The `source` metric label and log field. @default {source.kind} */
  name?: string;
  /**
   * Waits `ms` or until the signal aborts, never rejecting; tests inject a
   * fake. @default {a timer on `clock`, so that a `FakeClock` drives the loop}
   */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /**
   * The one record of when this source last synced (the daemon's sync gate).
   * When given, the sink records each success in it (the pipeline does, as
   * the last step of a view); without it the relister keeps its own.
   */
  gate?: SyncRecord;
}

/** The spacing of change-woken relists a source with this period gets (see {@linkcode RelisterOptions.minInterval}). */
function effectiveMinInterval(minInterval: number, period: number): number {
  return Math.min(minInterval, period / 2);
}

function checkDuration(name: string, value: number): void {
  if (!Number.isFinite(value) || value <= 0) {
    throw new RangeError(`Cannot relist with ${name} "${value}": it must be a positive number`);
  }
}

/**
 * Reads one pod source over and over and feeds its views to a sink.
 *
 * @example Usage
 * ```ts
 * import { Relister } from "./relister.ts";
 * import { systemClock } from "../clock.ts";
 * import { createMetricsRegistry } from "../metrics/registry.ts";
 * import { silentLogger } from "../log.ts";
 * const relister = new Relister({
 *   source: { kind: "fake", list: () => Promise.resolve([]) },
 *   sink: (pods) => console.assert(pods.length === 0),
 *   clock: systemClock,
 *   metrics: createMetricsRegistry().metrics,
 *   log: silentLogger,
 *   period: 1000,
 *   timeout: 5000,
 * });
 * console.assert(await relister.relistOnce(new AbortController().signal));
 * console.assert(relister.feed.synced);
 * ```
 */
export class Relister {
  #source: PolledSource;
  /** Where this source's views go, and its record. */
  readonly feed: SourceFeed;
  #clock: Clock;
  #metrics: Metrics;
  #log: Logger;
  #period: number;
  #timeout: number;
  #minInterval: number;
  /** The retry delays while the source fails: `period` doubling to the cap, no jitter. */
  readonly #backoff: Backoff;
  /** The wait after the last failed relist. */
  #retryDelay = 0;
  #name: string;
  #sleep: Sleep;
  #running = false;
  /** A change was requested since the last relist started. */
  #dirty = false;
  /** Aborted to cut the loop's period wait short; set while it waits. */
  #wake: AbortController | undefined;
  /**
   * The clock's time when the last relist started. The spacing is measured
   * from it when a woken loop needs it, not held as a timer: a timer per
   * relist would stay pending on an injected clock nobody advances (a test
   * calling `relistOnce` with the loop off) and be taken for the timers the
   * test waits on.
   */
  #lastStart = -Infinity;
  /** Relists and views, one at a time: each starts when the one before it has ended. */
  readonly #turns = new SerialQueue();
  /** The source's `list()` call not settled yet (also one whose relist gave up on it). */
  #listing: Promise<unknown> | undefined;
  /** Relists waiting for `#listing` to settle. */
  readonly #listingWaiters = new Set<() => void>();
  /** A turn that hands on a view the source pushed is waiting or queued, and has not run yet. */
  #viewQueued = false;
  /** The latest view the source pushed, and how many relists had started then. */
  #pushed: { readonly view: readonly PodSnapshot[]; readonly relists: number } | undefined;
  /** Relists started so far: a pushed view older than a relist's start is covered by it. */
  #relists = 0;
  /** How soon a pushed view may be handed on again. */
  readonly #viewBudget: ViewBudget;
  /** The signal of the last relist: ends a view's wait at shutdown. */
  #lastSignal: AbortSignal | undefined;

  /**
   * @param options Source, sink, timing and instrumentation.
   * @throws {RangeError} When `period`, `timeout` or `maxBackoff` is not a positive number.
   */
  constructor(options: RelisterOptions) {
    checkDuration("period", options.period);
    checkDuration("timeout", options.timeout);
    if (options.maxBackoff !== undefined) checkDuration("maxBackoff", options.maxBackoff);
    const minInterval = options.minInterval ?? 0;
    if (!Number.isFinite(minInterval) || minInterval < 0) {
      throw new RangeError(
        `Cannot relist with minInterval "${minInterval}": it must be a number of ms, 0 or more`,
      );
    }
    this.#source = options.source;
    this.#clock = options.clock;
    this.#metrics = options.metrics;
    this.#name = options.name ?? options.source.kind;
    this.#log = options.log;
    this.#period = options.period;
    this.#timeout = options.timeout;
    this.#minInterval = effectiveMinInterval(minInterval, options.period);
    if (this.#minInterval < minInterval) {
      this.#log.info("relist min interval clamped to half the relist period", {
        source: this.#name,
        minInterval,
        period: options.period,
        clampedTo: this.#minInterval,
      });
    }
    this.#backoff = new Backoff({
      initialMs: options.period,
      maxMs: Math.max(options.period, options.maxBackoff ?? DEFAULT_MAX_BACKOFF),
      jitter: 0,
    });
    this.#viewBudget = new ViewBudget(this.#minInterval);
    this.#sleep = options.sleep ?? clockSleep(options.clock);
    const sink = options.sink;
    this.feed = new SourceFeed({
      name: this.#name,
      sink: (snapshots) => sink(snapshots),
      clock: options.clock,
      metrics: options.metrics,
      log: options.log,
      ...(options.gate === undefined ? {} : { gate: options.gate }),
    });
  }

  /** The source's name in metrics and logs. */
  get name(): string {
    return this.#name;
  }

  /** The wait before the next relist, in ms: `period`, doubled per consecutive failure, capped. */
  get nextDelay(): number {
    return this.feed.consecutiveFailures === 0 ? this.#period : this.#retryDelay;
  }

  /** The spacing of change-woken relists in ms, after clamping (0: none). */
  get minInterval(): number {
    return this.#minInterval;
  }

  /** `true` while a change was requested that no relist has started to read yet. */
  get dirty(): boolean {
    return this.#dirty;
  }

  /**
   * Asks for a relist soon: the source learnt of a change (a runtime event,
   * a file event). Marks the source dirty and wakes the {@linkcode run} loop
   * from its period wait; a burst of requests costs one relist, plus one more
   * when requests arrive while a relist is reading, and that relist waits
   * until `minInterval` has passed since the last one started. A request
   * made while the source is dirty already is counted as coalesced. While the
   * source fails, the backoff is kept: the request waits for the next retry.
   */
  requestRelist(): void {
    if (this.#dirty) this.#metrics.relistWakeupsCoalesced.inc({ source: this.#name });
    this.#dirty = true;
    if (this.feed.consecutiveFailures === 0) this.#wake?.abort(CUT_SHORT);
  }

  /**
   * What the source tells between reads ({@linkcode PolledSource.watchChanges}):
   * a change to read soon, or a view it took the change into.
   */
  readonly changes: SourceChanges = {
    relist: () => this.requestRelist(),
    view: (snapshots) => this.#pushView(snapshots),
  };

  /**
   * Hands a view the source pushed to the sink without a read. A few at
   * once after a quiet spell (`VIEW_BURST`, 10: the changes of one pod start
   * each reach watchers at once), then at most once per `minInterval`, as
   * change-woken relists: views pushed meanwhile wait, and only the latest
   * is handed on. It runs at once when no relist is in progress, else
   * queued behind them, so views still reach the sink in order; a relist
   * that starts after the push covers it, and the pushed view is dropped.
   * Before the first successful relist, or while the source fails, it asks
   * for a relist instead.
   */
  #pushView(view: readonly PodSnapshot[]): void {
    const signal = this.#lastSignal;
    if (this.feed.consecutiveFailures > 0 || !this.feed.synced || signal === undefined) {
      this.requestRelist();
      return;
    }
    this.#pushed = { view, relists: this.#relists };
    if (this.#viewQueued) return;
    this.#viewQueued = true;
    const wait = this.#viewBudget.wait(this.#clock.now());
    const hand = () => void this.#turns.run(() => this.#deliverView());
    if (wait <= 0) return hand();
    this.#sleep(wait, signal).then(hand, hand);
  }

  /** One turn of {@linkcode #pushView}: the latest pushed view, to the sink. */
  #deliverView(): void {
    this.#viewQueued = false;
    const pushed = this.#pushed;
    this.#pushed = undefined;
    if (
      pushed === undefined || pushed.relists !== this.#relists ||
      this.feed.consecutiveFailures > 0 ||
      this.#lastSignal?.aborted
    ) return;
    this.#viewBudget.take(this.#clock.now());
    if (!this.feed.view(pushed.view)) this.#retryDelay = this.#backoff.next();
  }

  /**
   * Reads the source once (bounded by `timeout`) and passes the view to the
   * sink. Calls queue behind the relist in progress (the loop's or another
   * caller's), so two reads of the source never overlap and views reach the
   * sink in the order they were read.
   *
   * @param signal Abandons the read (shutdown); an abandoned read is not counted as an error.
   * @returns `true` when the sink received a fresh view.
   */
  relistOnce(signal: AbortSignal): Promise<boolean> {
    return this.#turns.run(() => this.#relist(signal));
  }

  /**
   * Relists every `period` ms (backing off while the source fails) until
   * aborted, and at once when {@linkcode requestRelist} wakes it.
   *
   * @param signal Stops the loop.
   * @returns Resolves once stopped.
   * @throws {TypeError} When the loop is already running.
   */
  async run(signal: AbortSignal): Promise<void> {
    if (this.#running) throw new TypeError(`Cannot run relister "${this.#name}": already running`);
    this.#running = true;
    // A source that learns of a change (runtime event, file event) wakes this loop.
    const watching = this.#source.watchChanges?.(signal, this.changes).catch((error) =>
      this.#log.error("change watch died", { source: this.#name, error })
    );
    try {
      while (!signal.aborted) {
        await this.relistOnce(signal);
        if (signal.aborted) break;
        await this.#waitForTurn(signal);
      }
    } finally {
      this.#running = false;
      await watching;
    }
  }

  /**
   * Waits out `nextDelay`, or less when a relist is (or gets) requested and
   * the source is healthy: then until the spacing since the last relist's
   * start is over. The period's end is never held back.
   */
  async #waitForTurn(signal: AbortSignal): Promise<void> {
    const healthy = this.feed.consecutiveFailures === 0;
    if (!(this.#dirty && healthy) && !(await this.#wokenByChange(signal))) return;
    // Measured again after each wait: a relistOnce may have started meanwhile.
    // A wall clock stepped back waits no longer than one spacing.
    for (;;) {
      const since = this.#clock.now() - this.#lastStart;
      const left = Math.min(this.#minInterval - since, this.#minInterval);
      if (left <= 0 || signal.aborted) return;
      await this.#sleep(left, signal);
    }
  }

  /** Waits out `nextDelay`; `true` when a change request cut it short. */
  async #wokenByChange(signal: AbortSignal): Promise<boolean> {
    const wake = new AbortController();
    const onAbort = () => wake.abort(CUT_SHORT);
    signal.addEventListener("abort", onAbort, { once: true });
    this.#wake = wake;
    try {
      await this.#sleep(this.nextDelay, wake.signal);
    } finally {
      this.#wake = undefined;
      signal.removeEventListener("abort", onAbort);
    }
    return wake.signal.aborted && !signal.aborted;
  }

  async #relist(signal: AbortSignal): Promise<boolean> {
    if (signal.aborted) return false;
    this.#lastSignal = signal;
    // This read starts after every request and pushed view so far: it answers them all.
    this.#dirty = false;
    this.#relists++;
    const started = this.#clock.now();
    this.#lastStart = started;
    const call = new AbortController();
    const onAbort = () => call.abort(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    const timer = new AbortController();
    this.#sleep(this.#timeout, timer.signal).then(() => {
      if (timer.signal.aborted) return;
      const message =
        `Cannot list pods of source "${this.#name}": no answer within ${this.#timeout} ms`;
      call.abort(new SourceUnavailableError(message, { reason: "timeout" }));
    }, () => {});
    let snapshots: readonly PodSnapshot[];
    try {
      snapshots = await untilAborted(this.#list(call.signal), call.signal);
    } catch (error) {
      if (signal.aborted) return false;
      this.feed.failed(error, undefined, started);
      this.#retryDelay = this.#backoff.next();
      return false;
    } finally {
      timer.abort(CUT_SHORT);
      signal.removeEventListener("abort", onAbort);
    }
    if (!this.feed.view(snapshots, undefined, started)) {
      this.#retryDelay = this.#backoff.next();
      return false;
    }
    this.#backoff.reset();
    return true;
  }

  /**
   * Calls `source.list()` once no earlier call is still out: a read that
   * timed out may still be running in the source (one that ignores its
   * signal), and a second one beside it could race it for the source's own
   * state. Its answer, whenever it comes, reaches no one.
   */
  async #list(signal: AbortSignal): Promise<readonly PodSnapshot[]> {
    while (this.#listing !== undefined) await this.#listingSettled(signal);
    signal.throwIfAborted();
    const listing = this.#source.list(signal);
    this.#listing = listing;
    const settled = () => {
      this.#listing = undefined;
      if (signal.aborted) {
        this.#log.debug("a relist that was given up on has ended; its answer is dropped", {
          source: this.#name,
        });
      }
      for (const waiter of this.#listingWaiters) waiter();
      this.#listingWaiters.clear();
    };
    listing.then(settled, settled);
    return await listing;
  }

  /** Resolves when the source's call in progress settles; rejects when `signal` aborts first. */
  #listingSettled(signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      const done = () => {
        signal.removeEventListener("abort", onAbort);
        resolve();
      };
      const onAbort = () => {
        this.#listingWaiters.delete(done);
        reject(signal.reason);
      };
      this.#listingWaiters.add(done);
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }
}
