/**
 * The serving core: how every surface admits a call and opens a watch. Both
 * Pods services, PodQuery and the HTTP API ask it, so the rules are the same
 * everywhere and `--max-watchers` is one bound across all of them:
 *
 * - a List or Get takes a token from its connection's bucket (PodQuery and
 *   HTTP; DESIGN.md §8 gives the kubelet's Pods services only the shared one),
 *   then from the shared bucket; then the daemon must be up and synced;
 * - a watch needs the daemon up and synced and one free slot of the pool,
 *   and runs on the query engine with the one queue bound;
 * - every refusal is a {@linkcode Refusal} and is counted by surface and reason.
 *
 * @module
 */

import type { CachedPod } from "../cache/types.ts";
import type { Clock } from "../clock.ts";
import { DEFAULT_QUEUE_LIMIT } from "../events/mod.ts";
import { numericDefault } from "../config_flags.ts";
import type { Metrics, Surface } from "../metrics/metrics.ts";
import type { PodSelector, QueryEngine, QueryWatch } from "../query/mod.ts";
import type { RateLimiter } from "../ratelimit/mod.ts";
import { ConnectionBuckets } from "./connection_buckets.ts";
import { Refusal, type RefusalReason } from "./refusal.ts";
import { WatchSlots } from "./watch_slots.ts";

/** Open watches allowed at once, all surfaces together, unless `--max-watchers` says otherwise. */
export const DEFAULT_MAX_WATCHERS = numericDefault("max-watchers");

/**
 * Why a watch's own signal aborts when it is closed: one shared reason, as
 * `abort()` without one makes a DOMException, stack trace and all, for every
 * watch that ends (a measurable part of 100 watchers coming and going).
 */
const WATCH_CLOSED = new Error("watch closed");

/** Surfaces whose List and Get draw from their connection's own bucket first. */
const CONNECTION_LIMITED: ReadonlySet<Surface> = new Set<Surface>(["podsapi_v1", "http"]);

/** What the core reads and counts into. */
export interface ServingCoreOptions {
  /** Where watches and selections come from. */
  engine: QueryEngine;
  /** Open once every pod source completed its first read (DESIGN.md §7). */
  gate: { readonly isOpen: boolean };
  /** The bucket every List and Get of every surface draws from (DESIGN.md §8). */
  limiter: RateLimiter;
  /** Each connection's own bucket (PodQuery and HTTP), taken from first. */
  connectionLimit: { qps: number; burst: number };
  clock: Clock;
  metrics: Metrics;
  /** Aborted when the daemon shuts down: calls are refused, open watches end. */
  shutdown: AbortSignal;
  /** Open watches allowed at once, all surfaces together. @default {DEFAULT_MAX_WATCHERS} */
  maxWatchers?: number;
  /** Events a watcher may have pending before it is dropped. @default {DEFAULT_QUEUE_LIMIT} */
  watchQueueLimit?: number;
}

/** A watch to open. */
export interface ServeWatchOptions {
  /** The surface it came in on (metric label). */
  surface: Surface;
  selector: PodSelector;
  /** Empty or absent: the initial list first; else the changes after this token. */
  resumeToken?: string;
  /** > 0: a BOOKMARK when nothing else was sent for this long, ms. */
  bookmarkMs?: number;
  /** The client's end: cancel, deadline, disconnect. */
  signal: AbortSignal;
  /** Whether a change between two versions of a selected pod is worth sending (masks). */
  visible?: (prev: CachedPod, pod: CachedPod) => boolean;
  /** Also send a MODIFIED when only what a pod holds (podresources) changed. @default {false} */
  resources?: boolean;
}

/** An admitted watch: iterate it; close it (or let `using` do it) when done. */
export interface ServedWatch extends QueryWatch, Disposable {
  /** Aborted when the client leaves, the daemon shuts down or the watch is closed. */
  readonly signal: AbortSignal;
  /** Ends the subscription and gives the slot back; a second call does nothing. */
  close(): void;
}

/** Admission and watches for every surface. */
export class ServingCore {
  #options: ServingCoreOptions;
  #buckets: ConnectionBuckets;
  #slots: WatchSlots;
  #queueLimit: number;
  /** How to close each open watch (the daemon's shutdown closes them all). */
  #open = new Set<() => void>();
  #watcherGauges = new Map<Surface, { inc(): void; dec(): void }>();

  /**
   * @param options Engine, gate, limiters, clock, metrics, shutdown and bounds.
   * @throws {RangeError} When a bound or a bucket setting is not usable.
   */
  constructor(options: ServingCoreOptions) {
    this.#options = options;
    options.shutdown.addEventListener("abort", () => {
      for (const close of [...this.#open]) close();
    }, { once: true });
    this.#buckets = new ConnectionBuckets({ ...options.connectionLimit, clock: options.clock });
    this.#slots = new WatchSlots(options.maxWatchers ?? DEFAULT_MAX_WATCHERS);
    this.#queueLimit = options.watchQueueLimit ?? DEFAULT_QUEUE_LIMIT;
    if (!Number.isInteger(this.#queueLimit) || this.#queueLimit < 1) {
      throw new RangeError(
        `Cannot use watch queue limit "${this.#queueLimit}": it must be a positive integer`,
      );
    }
  }

  /** Selections, lookups and history the handlers read. */
  get engine(): QueryEngine {
    return this.#options.engine;
  }

  /** The daemon's clock. */
  get clock(): Clock {
    return this.#options.clock;
  }

  /** Aborted when the daemon shuts down. */
  get shutdown(): AbortSignal {
    return this.#options.shutdown;
  }

  /** Open watches, all surfaces together. */
  get watchers(): number {
    return this.#slots.used;
  }

  /** The most open watches allowed at once. */
  get maxWatchers(): number {
    return this.#slots.limit;
  }

  /**
   * Admits a List or Get: the connection's bucket (on surfaces that have
   * one), the shared bucket, then shutdown and the sync gate.
   *
   * @param surface Where the call came in.
   * @param method `list` or `get` (label of the rate-limit metric).
   * @param connection The client connection: its object, or its address for HTTP.
   * @throws {Refusal} `rate_limited`, `shutting_down` or `not_synced`.
   */
  admit(surface: Surface, method: "list" | "get", connection: object | string): void {
    // The connection's own bucket first: a noisy client empties only its own.
    const own = !CONNECTION_LIMITED.has(surface) || this.#buckets.tryTake(connection);
    if (!own || !this.#options.limiter.tryTake()) {
      this.#options.metrics.rateLimited.inc({ method });
      this.#refuse(surface, "rate_limited");
    }
    this.checkServing(surface);
  }

  /**
   * Refuses any call while the daemon shuts down or a source has not synced;
   * a watch handler asks before it reads its request (DESIGN.md §7 comes first).
   *
   * @param surface Where the call came in.
   * @throws {Refusal} `shutting_down` or `not_synced`.
   */
  checkServing(surface: Surface): void {
    if (this.#options.shutdown.aborted) this.#refuse(surface, "shutting_down");
    if (!this.#options.gate.isOpen) this.#refuse(surface, "not_synced");
  }

  /**
   * Opens a watch: the daemon must be serving and a slot free. The watch
   * holds its slot until it is closed, its client leaves or the daemon
   * shuts down, whichever comes first.
   *
   * @param options Surface, selection, resume token, bookmarks, the client's signal, masks.
   * @returns The watch.
   * @throws {Refusal} `shutting_down`, `not_synced` or `too_many_watchers`.
   * @throws {ResumeTokenError} For a malformed or too old resume token (no slot is kept).
   */
  openWatch(options: ServeWatchOptions): ServedWatch {
    const { surface } = options;
    this.checkServing(surface);
    const release = this.#slots.tryTake();
    if (release === undefined) this.#refuse(surface, "too_many_watchers");
    // One signal per watch, aborted by close(): the client's signal and the
    // daemon's shutdown each call close() (AbortSignal.any made a signal
    // and weak references per watch, and the shutdown signal gathered them).
    const done = new AbortController();
    const signal = done.signal;
    let watch: QueryWatch;
    try {
      watch = this.#options.engine.openWatch({
        selector: options.selector,
        resumeToken: options.resumeToken ?? "",
        bookmarkMs: options.bookmarkMs ?? 0,
        signal,
        queueLimit: this.#queueLimit,
        apiVersion: surface,
        resources: options.resources === true,
        ...(options.visible === undefined ? {} : { visible: options.visible }),
      });
    } catch (err) {
      done.abort(WATCH_CLOSED);
      release();
      throw err;
    }
    const gauge = this.#watcherGauge(surface);
    gauge.inc();
    const client = options.signal;
    let open = true;
    const close = () => {
      if (!open) return;
      open = false;
      client.removeEventListener("abort", close);
      this.#open.delete(close);
      done.abort(WATCH_CLOSED);
      release();
      gauge.dec();
    };
    // A client that leaves frees its slot at once, whatever its handler is doing.
    if (client.aborted) close();
    else {
      client.addEventListener("abort", close, { once: true });
      this.#open.add(close);
    }
    return {
      position: watch.position,
      signal,
      close,
      [Symbol.dispose]: close,
      batches: () => watch.batches(),
      [Symbol.asyncIterator]: () => watch[Symbol.asyncIterator](),
    };
  }

  /** The open-watches gauge of a surface, its child looked up once. */
  #watcherGauge(surface: Surface): { inc(): void; dec(): void } {
    let gauge = this.#watcherGauges.get(surface);
    if (gauge === undefined) {
      gauge = this.#options.metrics.watchers.labels({ "server_api_version": surface });
      this.#watcherGauges.set(surface, gauge);
    }
    return gauge;
  }

  #refuse(surface: Surface, reason: RefusalReason): never {
    this.#options.metrics.refused.inc({ surface, reason });
    throw new Refusal(reason);
  }
}
