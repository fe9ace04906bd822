/**
 * The change log behind resume tokens: the cache's events in `seq` order,
 * retained for a time, a count (`--watch-history`) and a number of bytes
 * (`--watch-history-bytes`), like the API server's watch cache. A token names this daemon incarnation and a position (a cache
 * resourceVersion); a watch resumed from it gets the events after it.
 *
 * @module
 */

import type { CachedPod, PodEvent } from "../cache/types.ts";
import type { Clock } from "../clock.ts";
import { numericDefault } from "../config_flags.ts";
import { ResumeTokenError, TOKEN_TOO_OLD } from "./errors.ts";

/** How much history to keep; an event goes when any bound is exceeded. */
export interface HistoryLimits {
  /** Longest time an event is kept, ms. */
  maxAgeMs: number;
  /** Most events kept. */
  maxEvents: number;
  /**
   * Most bytes the retained pod versions may hold, as
   * {@linkcode retainedBytes} counts them. @default {`--watch-history-bytes`'s}
   */
  maxBytes?: number;
}

/**
 * What one pod version holds in memory, estimated from its encoding: the
 * bytes themselves, its JSON object (a few times the encoded size, in heap
 * snapshots) and the watch frames framed from it while it lives (another
 * copy of the bytes). Under churn with watchers, a factor of 4 let the
 * history hold more than its bound; 6 keeps it within (BENCHMARKS.md,
 * "Design figures").
 */
export const RETAINED_PER_ENCODED_BYTE = 6;
const ENTRY_BYTES = 160;

/**
 * @param pod A pod version.
 * @returns The memory it is estimated to hold, bytes.
 */
export function retainedBytes(pod: CachedPod): number {
  return pod.bytes.byteLength * RETAINED_PER_ENCODED_BYTE + ENTRY_BYTES;
}

/** Options of {@linkcode ChangeLog}. */
export interface ChangeLogOptions extends HistoryLimits {
  clock: Clock;
  /** Names this daemon run in every token. */
  incarnation: string;
  /** The position the log starts at (the store's resourceVersion when created). */
  start: number;
}

const TOKEN = /^([0-9a-z]{1,32})\.(\d{1,15})$/;

/**
 * Makes a fresh incarnation name: a daemon restart invalidates every token.
 *
 * @returns Eight random base-36 characters.
 */
export function newIncarnation(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  return [...bytes].map((b) => (b % 36).toString(36)).join("");
}

/** Retained events and the tokens that name positions in them. */
export class ChangeLog {
  readonly incarnation: string;
  #clock: Clock;
  #maxAgeMs: number;
  #maxEvents: number;
  #maxBytes: number;
  /**
   * Retained events, oldest first; `#times[i]` is when `#events[i]` was
   * recorded, `#costs[i]` the bytes it holds that nothing older in the log does.
   */
  #events: PodEvent[] = [];
  #times: number[] = [];
  #costs: number[] = [];
  #bytes = 0;
  /** Index of the oldest retained entry (the arrays are compacted lazily). */
  #head = 0;
  /** The highest position whose following events are all retained. */
  #floor: number;
  #position: number;

  /** @param options Limits, clock, incarnation and start position. */
  constructor(options: ChangeLogOptions) {
    const maxBytes = options.maxBytes ?? numericDefault("watch-history-bytes");
    if (!(options.maxEvents >= 1) || !(options.maxAgeMs > 0) || !(maxBytes >= 0)) {
      throw new RangeError(
        `Cannot keep a watch history of "${options.maxEvents}" events, "${maxBytes}" bytes for "${options.maxAgeMs}" ms`,
      );
    }
    this.#maxBytes = maxBytes;
    this.incarnation = options.incarnation;
    this.#clock = options.clock;
    this.#maxAgeMs = options.maxAgeMs;
    this.#maxEvents = options.maxEvents;
    this.#floor = options.start;
    this.#position = options.start;
  }

  /** The newest position recorded. */
  get position(): number {
    return this.#position;
  }

  /** The oldest position a token may name and still be resumed. */
  get floor(): number {
    this.#prune();
    return this.#floor;
  }

  /** Events retained. */
  get size(): number {
    return this.#events.length - this.#head;
  }

  /** Memory the retained events hold, as {@linkcode retainedBytes} estimates it. */
  get bytes(): number {
    return this.#bytes;
  }

  /**
   * Records a batch of the cache's events.
   *
   * @param events Events in `seq` order, each above every recorded one.
   */
  append(events: readonly PodEvent[]): void {
    const at = this.#clock.now();
    for (const event of events) {
      // The version before is held by an older event of the log, unless that
      // one is gone: then only this event keeps it.
      const prev = event.prev;
      const cost = retainedBytes(event.pod) +
        (prev !== undefined && prev.version <= this.#floor ? retainedBytes(prev) : 0);
      this.#events.push(event);
      this.#times.push(at);
      this.#costs.push(cost);
      this.#bytes += cost;
      this.#position = event.seq;
    }
    this.#prune();
  }

  /**
   * @param position A position (cache resourceVersion).
   * @returns The token naming it.
   */
  token(position: number): string {
    return `${this.incarnation}.${position}`;
  }

  /**
   * Reads a token.
   *
   * @param token A token from {@linkcode ChangeLog.token}.
   * @returns Its position, which may be resumed from.
   * @throws {ResumeTokenError} `malformed` for what is not a token; `expired`
   *   for another incarnation's token or one older than the retained log.
   */
  parse(token: string): number {
    const m = TOKEN.exec(token);
    if (m === null) {
      throw new ResumeTokenError(
        "malformed",
        `Cannot parse resume token ${JSON.stringify(token.slice(0, 80))}`,
      );
    }
    const position = Number(m[2]);
    if (m[1] !== this.incarnation || position < this.floor) {
      throw new ResumeTokenError("expired", TOKEN_TOO_OLD);
    }
    if (position > this.#position) {
      throw new ResumeTokenError(
        "malformed",
        `Cannot resume from token ${JSON.stringify(token)}: it is ahead of this daemon`,
      );
    }
    return position;
  }

  /**
   * The events after `from`, up to and including `to`.
   *
   * @param from A position at or above {@linkcode ChangeLog.floor}.
   * @param to The last position wanted (a subscription's snapshot version).
   * @returns The events, oldest first (a fresh array).
   * @throws {ResumeTokenError} `expired` when `from` fell out of the log.
   */
  since(from: number, to: number): PodEvent[] {
    if (from < this.floor) throw new ResumeTokenError("expired", TOKEN_TOO_OLD);
    const out: PodEvent[] = [];
    // Binary search for the first event after `from`.
    const all = this.#events;
    let lo = this.#head;
    let hi = all.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (all[mid]!.seq <= from) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < all.length; i++) {
      const event = all[i]!;
      if (event.seq > to) break;
      out.push(event);
    }
    return out;
  }

  #prune(): void {
    const oldest = this.#clock.now() - this.#maxAgeMs;
    const events = this.#events;
    while (this.#head < events.length) {
      if (
        events.length - this.#head <= this.#maxEvents && this.#times[this.#head]! > oldest &&
        this.#bytes <= this.#maxBytes
      ) break;
      this.#floor = events[this.#head]!.seq;
      this.#bytes -= this.#costs[this.#head]!;
      this.#head++;
    }
    // Compact every 1024 dropped events (or once they dominate): dropped pods
    // are not kept alive for long, and copying stays amortized O(1) per event.
    if (this.#head >= 1024 || (this.#head > 0 && this.#head * 2 > events.length)) {
      this.#events = events.slice(this.#head);
      this.#times = this.#times.slice(this.#head);
      this.#costs = this.#costs.slice(this.#head);
      this.#head = 0;
    }
  }
}
