/**
 * The one sink every source hands its views to: a watched source directly,
 * a polled one through its {@linkcode Relister}. It passes each full view on
 * to the pipeline and keeps the source's record: synced or not, failures in
 * a row and the last error (for `/readyz`, {@linkcode readinessReasons}),
 * why its view is held, and the source's metrics.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import type { Logger } from "../log.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { PodSnapshot } from "../model/pod.ts";
import { SourceUnavailableError, type ViewSink } from "../sources/mod.ts";
import { SyncGate } from "./sync_gate.ts";

/** Where a source's successful views are recorded, by name. */
export type SyncRecord = Pick<SyncGate, "lastSuccess" | "markSynced" | "vouch">;

/** Options of {@linkcode SourceFeed}. */
export interface SourceFeedOptions {
  /** The `source` metric label and log field. */
  name: string;
  /** Takes every view on (the daemon: into the pipeline); `held` while the source does not answer. */
  sink: (snapshots: readonly PodSnapshot[], held: boolean) => void;
  clock: Clock;
  metrics: Metrics;
  log: Logger;
  /**
   * The one record of when this source last synced (the daemon's sync gate).
   * When given, the sink records each success in it (the pipeline does, as
   * the last step of a view); without it the feed keeps its own.
   */
  gate?: SyncRecord;
  /**
   * The source watches, and its last view stays current until it says it
   * failed: no silence makes it stale. @default {false}
   */
  watched?: boolean;
}

function reasonOf(error: unknown): string {
  return error instanceof SourceUnavailableError ? error.reason : "error";
}

/** One source's sink and record. */
export class SourceFeed implements ViewSink {
  readonly #name: string;
  readonly #sink: SourceFeedOptions["sink"];
  readonly #clock: Clock;
  readonly #metrics: Metrics;
  readonly #log: Logger;
  readonly #gate: SyncRecord;
  /** Whether this feed marks the gate (no gate was given: the sink does not). */
  readonly #marksGate: boolean;
  readonly #watched: boolean;
  #lastError: unknown;
  #lastReason: string | undefined;
  #failures = 0;
  #heldBecause: string | undefined;

  /** @param options Name, sink, clock, instrumentation and the sync record. */
  constructor(options: SourceFeedOptions) {
    this.#name = options.name;
    this.#sink = options.sink;
    this.#clock = options.clock;
    this.#metrics = options.metrics;
    this.#log = options.log;
    this.#gate = options.gate ?? new SyncGate({ sources: [this.#name], clock: options.clock });
    this.#marksGate = options.gate === undefined;
    this.#watched = options.watched ?? false;
  }

  /** The source's name in metrics and logs. */
  get name(): string {
    return this.#name;
  }

  /** `true` once a view was taken. */
  get synced(): boolean {
    return this.#gate.lastSuccess(this.#name) !== undefined;
  }

  /** Clock time (ms) of the last view taken, if any. */
  get lastSuccessAt(): number | undefined {
    return this.#gate.lastSuccess(this.#name);
  }

  /** The error of the last failure, or `undefined` after a view. */
  get lastError(): unknown {
    return this.#lastError;
  }

  /** Failures since the last view taken. */
  get consecutiveFailures(): number {
    return this.#failures;
  }

  /** Why the source's view is held (it does not answer), for `/readyz`; `undefined` when live. */
  get heldBecause(): string | undefined {
    return this.#heldBecause;
  }

  /**
   * Takes a full view (see {@linkcode ViewSink.view}): hands it to the sink
   * and records the outcome.
   *
   * @param snapshots Every pod the source knows now.
   * @param heldBecause Why the view is held, when it is.
   * @param started Clock time the read started, for the duration metric (none for a pushed view).
   * @returns `true` when the sink took it.
   */
  view(snapshots: readonly PodSnapshot[], heldBecause?: string, started?: number): boolean {
    const wasSynced = this.synced;
    try {
      this.#sink(snapshots, heldBecause !== undefined);
    } catch (error) {
      this.failed(error, "sink", started);
      return false;
    }
    this.#heldBecause = heldBecause;
    this.#succeeded(snapshots.length, started, wasSynced);
    return true;
  }

  /**
   * Records that the source could not give a view (see {@linkcode ViewSink.failed}):
   * counted, logged once per outage and per change of cause.
   *
   * @param error Why.
   * @param reason The metric label. @default {the error's reason, or `error`}
   * @param started Clock time the read started, for the duration metric.
   */
  failed(error: unknown, reason = reasonOf(error), started?: number): void {
    const source = this.#name;
    this.#observe(started);
    const previous = this.#lastReason;
    this.#failures++;
    this.#lastError = error;
    this.#lastReason = reason;
    if (this.#watched) this.#gate.vouch(source, false);
    this.#metrics.relistErrors.inc({ source, reason });
    if (!this.synced) this.#metrics.sourceSynced.set({ source }, 0);
    const level = this.#failures === 1 || previous !== reason ? "warn" : "debug";
    this.#log[level]("relist failed, keeping the last known pods", {
      source,
      reason,
      failures: this.#failures,
      error,
    });
  }

  /**
   * For a watched source whose last word was a view: its view is current
   * now, so its last-success time is now (what a quiet watch says).
   */
  renew(): void {
    if (!this.#watched || this.#failures > 0 || !this.synced) return;
    this.#metrics.relistLastSuccess.set({ source: this.#name }, this.#clock.now() / 1000);
  }

  #observe(started: number | undefined): void {
    if (started === undefined) return;
    const seconds = Math.max(0, this.#clock.now() - started) / 1000;
    this.#metrics.relistDuration.observe({ source: this.#name }, seconds);
  }

  #succeeded(pods: number, started: number | undefined, wasSynced: boolean): void {
    const source = this.#name;
    this.#observe(started);
    if (this.#failures > 0) {
      this.#log.info("relist recovered", { source, failures: this.#failures });
    } else if (!wasSynced) {
      this.#log.info("source synced", { source, pods });
    }
    if (this.#marksGate) this.#gate.markSynced(source);
    if (this.#watched) this.#gate.vouch(source, true);
    this.#lastError = undefined;
    this.#lastReason = undefined;
    this.#failures = 0;
    this.#metrics.relistLastSuccess.set({ source }, this.#clock.now() / 1000);
    this.#metrics.sourcePods.set({ source }, pods);
    this.#metrics.sourceSynced.set({ source }, 1);
  }
}

/**
 * Why the daemon is not ready: the gate's reasons (a source that never
 * synced, or that has been silent too long), each failing source's last
 * error appended so `/readyz` says why, not only which.
 *
 * @param gate The sync gate.
 * @param feeds Every source's feed.
 * @returns The reasons; empty when ready.
 */
export function readinessReasons(
  gate: Pick<SyncGate, "notReadyReasons">,
  feeds: readonly Pick<SourceFeed, "name" | "consecutiveFailures" | "lastError">[],
): string[] {
  const reasons = [...gate.notReadyReasons()];
  if (reasons.length === 0) return reasons;
  for (const r of feeds) {
    if (r.consecutiveFailures === 0 || r.lastError === undefined) continue;
    const error = r.lastError instanceof Error ? r.lastError.message : String(r.lastError);
    reasons.push(`source "${r.name}" failed ${r.consecutiveFailures} time(s) in a row: ${error}`);
  }
  return reasons;
}
