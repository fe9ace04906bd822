/**
 * The sync gate of DESIGN.md §7: closed until every configured source has
 * completed its first full read (or, for a best-effort source, has been
 * released after its timeout), then open for good. Separately, it reports
 * staleness for `/readyz`: a source whose last success is too old makes the
 * daemon not ready, without closing the gate (the last known pods are still
 * served).
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import { numericDefault } from "../config_flags.ts";

/**
 * How old a source's last successful read may get before the daemon reports
 * not ready, in ms: the kubelet's PLEG relist threshold (3 minutes).
 */
export const DEFAULT_STALE_AFTER = numericDefault("relist-threshold");

/** Options of {@linkcode SyncGate}. */
export interface SyncGateOptions {
  /** Names of the configured sources (the relisters' `name`). */
  sources: readonly string[];
  /** Timestamps `markSynced()`. */
  clock: Clock;
  /** Staleness threshold in ms. @default {DEFAULT_STALE_AFTER} */
  staleAfter?: number;
}

/** The result of {@linkcode SyncGate.health}. */
export interface GateHealth {
  /** `true` when the gate is open and every source is fresh. */
  readonly ready: boolean;
  /** Why not ready, one sentence per source. */
  readonly reasons: readonly string[];
  /**
   * Problems of released (best-effort) sources: reported, but they do not
   * make the daemon not ready. Absent when there are none.
   */
  readonly degraded?: readonly string[];
}

/**
 * Tracks which sources have synced and how fresh they are.
 *
 * @example Usage
 * ```ts
 * import { SyncGate } from "./sync_gate.ts";
 * import { FakeClock } from "../clock.ts";
 * const gate = new SyncGate({ sources: ["cri"], clock: new FakeClock(0) });
 * console.assert(!gate.isOpen && gate.pending()[0] === "cri");
 * gate.markSynced("cri");
 * console.assert(gate.isOpen && gate.health(1000).ready);
 * ```
 */
export class SyncGate {
  #clock: Clock;
  #staleAfter: number;
  /** Last success per source, `undefined` until the first one. */
  #lastSuccess = new Map<string, number | undefined>();
  #pending: number;
  #waiters = new Set<() => void>();
  /** Watched sources whose last view is current until they say otherwise: never stale. */
  #vouched = new Set<string>();
  /** Sources released by {@linkcode SyncGate.release}: they no longer block or fail readiness. */
  #released = new Set<string>();

  /**
   * @param options Sources, clock and threshold.
   * @throws {RangeError} When `staleAfter` is not a positive number.
   */
  constructor(options: SyncGateOptions) {
    const staleAfter = options.staleAfter ?? DEFAULT_STALE_AFTER;
    if (!Number.isFinite(staleAfter) || staleAfter <= 0) {
      throw new RangeError(
        `Cannot create sync gate with staleAfter "${staleAfter}": it must be a positive number`,
      );
    }
    this.#clock = options.clock;
    this.#staleAfter = staleAfter;
    for (const name of options.sources) this.#lastSuccess.set(name, undefined);
    this.#pending = this.#lastSuccess.size;
  }

  /** `true` once every source has synced; never closes again. */
  get isOpen(): boolean {
    return this.#pending === 0;
  }

  /**
   * @returns Sources that have not completed a first read and still block
   * the gate (not released), in configuration order.
   */
  pending(): string[] {
    const names: string[] = [];
    for (const [name, at] of this.#lastSuccess) {
      if (at === undefined && !this.#released.has(name)) names.push(name);
    }
    return names;
  }

  /**
   * Stops waiting for a source: a best-effort source that has not synced
   * within its timeout no longer keeps the gate closed, and its problems no
   * longer make the daemon not ready (they are listed in `degraded`).
   *
   * @param name The source.
   * @throws {RangeError} When the source is not configured.
   */
  release(name: string): void {
    if (!this.#lastSuccess.has(name)) {
      throw new RangeError(`Cannot release source "${name}": it is not configured`);
    }
    if (this.#released.has(name)) return;
    this.#released.add(name);
    if (this.#lastSuccess.get(name) === undefined) this.#settle(-1);
  }

  /**
   * @param name A source name.
   * @returns Clock time (ms) of the source's last success, if any.
   */
  lastSuccess(name: string): number | undefined {
    return this.#lastSuccess.get(name);
  }

  /**
   * Records a successful full read of a source; call it after every success
   * (it also refreshes staleness).
   *
   * @param name The source.
   * @throws {RangeError} When the source is not configured.
   */
  markSynced(name: string): void {
    if (!this.#lastSuccess.has(name)) {
      throw new RangeError(`Cannot mark source "${name}" as synced: it is not configured`);
    }
    const first = this.#lastSuccess.get(name) === undefined && !this.#released.has(name);
    this.#lastSuccess.set(name, this.#clock.now());
    if (first) this.#settle(-1);
  }

  /**
   * Records whether a watched source vouches for its last view: while it
   * does, silence is not staleness (a watch brings changes when they
   * happen); once it stops (it failed), its view ages from now.
   *
   * @param name The source.
   * @param current Whether its last view is current.
   */
  vouch(name: string, current: boolean): void {
    if (current) {
      this.#vouched.add(name);
    } else if (this.#vouched.delete(name) && this.#lastSuccess.get(name) !== undefined) {
      this.#lastSuccess.set(name, this.#clock.now());
    }
  }

  #settle(change: number): void {
    this.#pending += change;
    if (this.#pending !== 0) return;
    const waiters = [...this.#waiters];
    this.#waiters.clear();
    for (const wake of waiters) wake();
  }

  /**
   * Reports readiness: every source synced, and none silent for longer than
   * the threshold.
   *
   * @param now Clock time in ms.
   * @returns Readiness and its reasons.
   */
  health(now: number): GateHealth {
    const reasons: string[] = [];
    const degraded: string[] = [];
    for (const [name, at] of this.#lastSuccess) {
      const list = this.#released.has(name) ? degraded : reasons;
      if (at === undefined) {
        list.push(`source "${name}" has not completed its first read`);
      } else if (!this.#vouched.has(name) && now - at > this.#staleAfter) {
        const age = Math.floor((now - at) / 1000);
        const limit = Math.floor(this.#staleAfter / 1000);
        list.push(`source "${name}" last read ${age} s ago (threshold ${limit} s)`);
      }
    }
    const ready = reasons.length === 0;
    return degraded.length === 0 ? { ready, reasons } : { ready, reasons, degraded };
  }

  /**
   * {@linkcode SyncGate.health} at the clock's current time, for `/readyz`.
   *
   * @returns Why the daemon is not ready; empty when ready.
   */
  notReadyReasons(): readonly string[] {
    return this.health(this.#clock.now()).reasons;
  }

  /**
   * The `degraded` part of {@linkcode SyncGate.health} at the clock's current
   * time: what `/readyz` lists after `ok` while released sources fail.
   *
   * @returns Problems of released sources; empty when there are none.
   */
  degradedReasons(): readonly string[] {
    return this.health(this.#clock.now()).degraded ?? [];
  }

  /**
   * Waits for the gate to open.
   *
   * @param signal Abandons the wait.
   * @returns Resolves once open (at once if already open).
   * @throws The signal's reason when it aborts first.
   */
  waitOpen(signal: AbortSignal): Promise<void> {
    if (this.isOpen) return Promise.resolve();
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        this.#waiters.delete(wake);
        reject(signal.reason);
      };
      const wake = () => {
        signal.removeEventListener("abort", onAbort);
        resolve();
      };
      this.#waiters.add(wake);
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }
}
