/**
 * The watch fan-out: the cache's events go to every subscriber's own bounded
 * queue. A slow subscriber only ever costs itself: its queue coalesces, then
 * overflows and it is dropped; `publish()` never waits.
 *
 * @module
 */

import {
  type CachedPod,
  isResourcesOnlyChange,
  type PodEvent,
  type PodStore,
} from "../cache/types.ts";
import type { Metrics, Surface } from "../metrics/metrics.ts";
import { CoalescingQueue } from "./_coalescing_queue.ts";
import { numericDefault } from "../config_flags.ts";

/** What {@linkcode Subscription.next} resolves to. */
export type SubscriptionItem =
  /** The next change. */
  | { readonly state: "event"; readonly event: PodEvent }
  /** The queue overflowed; the subscription is over and `lost` events were discarded. */
  | { readonly state: "dropped"; readonly lost: number }
  /** The subscriber aborted or the hub closed (shutdown). */
  | { readonly state: "closed" };

/** Options of {@linkcode EventHub.subscribe}. */
export interface SubscribeOptions {
  /** Ends the subscription and frees its queue (client cancel or deadline). */
  signal: AbortSignal;
  /** Pending events (after coalescing) beyond which the subscriber is dropped. @default {DEFAULT_QUEUE_LIMIT} */
  queueLimit?: number;
  /**
   * Filters MODIFIED events when they are queued, e.g. to skip changes
   * outside a watch's field mask. ADDED and DELETED always pass: a watcher
   * must see every pod's birth and death.
   */
  accept?: (event: PodEvent) => boolean;
  /**
   * Also deliver MODIFIED events that changed only a pod's podresources
   * allocation (same bytes). Off by default: a Pods API watcher must never
   * get a MODIFIED whose pod did not change.
   * @default {false}
   */
  resources?: boolean;
  /** The `server_api_version` label of `watchersDropped`. @default {"v1alpha1"} */
  apiVersion?: Surface;
  /**
   * Apply `queueLimit` only after {@linkcode Subscription.markLive}: while a
   * watcher is still sending its snapshot, changes queue up (coalesced, so at
   * most one per pod) instead of dropping it. Many watchers starting at once
   * on a large node would otherwise be dropped before they could keep up.
   * @default {false}
   */
  deferLimitUntilLive?: boolean;
}

/** One watcher's view: the pods at subscription time, then every later change. */
export interface Subscription {
  /**
   * Every pod at subscription time, sorted by UID; empty once
   * {@linkcode Subscription.markLive}: a live watcher holds no old list.
   */
  readonly snapshot: readonly CachedPod[];
  /** The store's resourceVersion of `snapshot`; every event has a greater `seq`. */
  readonly resourceVersion: number;
  /** Events queued and not yet taken by `next()`. */
  readonly pending: number;
  /** `false` once dropped or closed (queued events are discarded then). */
  readonly open: boolean;
  /**
   * Waits for the next change. Once `dropped` or `closed` is returned,
   * every later call returns the same.
   *
   * @returns The next item.
   * @throws {TypeError} When a previous call is still pending.
   */
  next(): Promise<SubscriptionItem>;
  /**
   * Takes the next queued change without waiting, as `next()` would have
   * given it.
   *
   * @returns The change, or `undefined` when none is queued (or the
   *   subscription is over: `next()` then says how).
   */
  poll(): PodEvent | undefined;
  /** Says the snapshot has been delivered: from now on `queueLimit` applies, and `snapshot` is let go. */
  markLive(): void;
}

/** Options of {@linkcode EventHub}. */
export interface EventHubOptions {
  /** Where subscribers take their snapshot from. */
  store: PodStore;
  metrics: Metrics;
}

/** The default per-watcher queue bound (DESIGN.md §6.5). */
export const DEFAULT_QUEUE_LIMIT = numericDefault("watch-queue-size");

const CLOSED: SubscriptionItem = Object.freeze({ state: "closed" });

interface SubscriberInit {
  snapshot: readonly CachedPod[];
  resourceVersion: number;
  options: SubscribeOptions;
  metrics: Metrics;
  detach: (subscriber: Subscriber) => void;
}

class Subscriber implements Subscription {
  snapshot: readonly CachedPod[];
  readonly resourceVersion: number;
  #queue: CoalescingQueue;
  #limit: number;
  #accept: ((event: PodEvent) => boolean) | undefined;
  #resources: boolean;
  #waiter: ((item: SubscriptionItem) => void) | undefined;
  /** The item that ended the subscription (dropped, closed), once it has ended. */
  #ending: SubscriptionItem | undefined;
  #metrics: Metrics;
  #apiVersion: Surface;
  #detach: () => void;
  #behind = false;
  #live: boolean;
  /** Headroom for the backlog left from the snapshot phase; shrinks as it drains. */
  #allowance = 0;

  constructor(init: SubscriberInit) {
    this.snapshot = init.snapshot;
    this.resourceVersion = init.resourceVersion;
    this.#limit = init.options.queueLimit ?? DEFAULT_QUEUE_LIMIT;
    const accept = init.options.accept;
    this.#accept = accept;
    this.#resources = init.options.resources === true;
    // A merge may bring a pod back to what this watcher last saw: then it hears nothing.
    this.#queue = new CoalescingQueue({
      resources: this.#resources,
      ...(accept === undefined ? {} : { keep: accept }),
    });
    this.#live = init.options.deferLimitUntilLive !== true;
    this.#metrics = init.metrics;
    this.#apiVersion = init.options.apiVersion ?? "v1alpha1";
    const signal = init.options.signal;
    const onAbort = () => this.close();
    signal.addEventListener("abort", onAbort, { once: true });
    // Not `init`: it holds the snapshot, which goes once the watcher is live.
    const detach = init.detach;
    this.#detach = () => {
      signal.removeEventListener("abort", onAbort);
      detach(this);
    };
  }

  get pending(): number {
    return this.#queue.size;
  }

  get open(): boolean {
    return this.#ending === undefined;
  }

  next(): Promise<SubscriptionItem> {
    const event = this.poll();
    if (event !== undefined) return Promise.resolve({ state: "event", event });
    if (this.#ending !== undefined) return Promise.resolve(this.#ending);
    if (this.#waiter !== undefined) {
      return Promise.reject(new TypeError("Cannot call next() while a previous call is pending"));
    }
    return new Promise((resolve) => this.#waiter = resolve);
  }

  poll(): PodEvent | undefined {
    const event = this.#queue.shift();
    if (this.#allowance > this.#queue.size) this.#allowance = this.#queue.size;
    return event;
  }

  deliver(event: PodEvent): void {
    if (this.#ending !== undefined || event.seq <= this.resourceVersion) return;
    if (event.type === "MODIFIED") {
      if (!this.#resources && isResourcesOnlyChange(event)) return;
      if (this.#accept !== undefined && !this.#accept(event)) return;
    }
    const waiter = this.#waiter;
    if (waiter !== undefined) {
      this.#waiter = undefined;
      waiter({ state: "event", event });
      return;
    }
    const merged = this.#queue.push(event);
    if (merged > 0) this.#metrics.watchEventsCoalesced.inc(merged);
  }

  /**
   * Called once before a batch: a subscriber that has not taken everything
   * of earlier batches is behind.
   */
  beginBatch(): void {
    this.#behind = this.#queue.size > 0;
  }

  /**
   * Called once after a batch. One relist may change more pods than the
   * queue bound; a watcher that had drained its queue is not punished for
   * that (coalescing keeps its queue at most one entry per pod). A watcher
   * still behind from an earlier batch and now over the bound is dropped.
   */
  endBatch(): void {
    const bound = this.#limit + this.#allowance;
    if (this.#ending === undefined && this.#live && this.#behind && this.#queue.size > bound) {
      this.#drop();
    }
  }

  markLive(): void {
    if (this.#live) return;
    this.#live = true;
    this.snapshot = [];
    // What queued up while the snapshot was sent is a backlog the watcher
    // may work off; the bound applies to growth beyond it.
    this.#allowance = this.#queue.size;
  }

  close(): void {
    this.#finish(CLOSED);
  }

  #drop(): void {
    const lost = this.#queue.size;
    this.#metrics.watchEventsDropped.inc(lost);
    this.#metrics.watchersDropped.inc({ server_api_version: this.#apiVersion });
    this.#finish(Object.freeze({ state: "dropped", lost }));
  }

  #finish(item: SubscriptionItem): void {
    if (this.#ending !== undefined) return;
    this.#ending = item;
    this.#queue.clear();
    this.#detach();
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.(item);
  }
}

/**
 * Fans the cache's events out to watchers, each with a bounded, coalescing
 * queue. Publishing costs O(1) per subscriber and event and never blocks.
 *
 * @example Usage
 * ```ts
 * import { EventHub } from "./hub.ts";
 * import { PodCache } from "../cache/pod_cache.ts";
 * import { createMetricsRegistry } from "../metrics/registry.ts";
 * import { FakeClock } from "../clock.ts";
 * const cache = new PodCache({ encode: () => new Uint8Array(), clock: new FakeClock(0) });
 * const hub = new EventHub({ store: cache, metrics: createMetricsRegistry().metrics });
 * const controller = new AbortController();
 * const watch = hub.subscribe({ signal: controller.signal });
 * hub.publish(cache.apply([{ uid: "u", pod: { metadata: { uid: "u", name: "p", namespace: "d" } } }]));
 * const item = await watch.next();
 * console.assert(item.state === "event" && item.event.type === "ADDED");
 * controller.abort();
 * ```
 */
export class EventHub {
  #store: PodStore;
  #metrics: Metrics;
  #subscribers = new Set<Subscriber>();
  #closed = false;

  /** @param options The store to snapshot and the metrics to count drops in. */
  constructor(options: EventHubOptions) {
    this.#store = options.store;
    this.#metrics = options.metrics;
  }

  /** Subscribers currently registered. */
  get size(): number {
    return this.#subscribers.size;
  }

  /** `true` after {@linkcode EventHub.close}. */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Hands events to every subscriber. Call it in the same tick as the
   * `apply()` that produced them; events at or below a subscriber's snapshot
   * version are skipped, so a subscription never sees a change twice.
   *
   * @param events Events in `seq` order.
   */
  publish(events: readonly PodEvent[]): void {
    if (events.length === 0) return;
    for (const subscriber of this.#subscribers) {
      subscriber.beginBatch();
      for (const event of events) subscriber.deliver(event);
      subscriber.endBatch();
    }
  }

  /**
   * Takes the store's snapshot and registers for every later event in one
   * synchronous step: no change falls between the two, none is in both.
   * After `close()` or with an aborted signal, the subscription is already
   * closed (empty snapshot).
   *
   * @param options Signal, queue bound, event filter and metric label.
   * @returns The subscription.
   * @throws {RangeError} When `queueLimit` is not a positive integer.
   */
  subscribe(options: SubscribeOptions): Subscription {
    const limit = options.queueLimit ?? DEFAULT_QUEUE_LIMIT;
    if (!Number.isInteger(limit) || limit < 1) {
      throw new RangeError(
        `Cannot subscribe with queue limit "${limit}": it must be a positive integer`,
      );
    }
    const open = !this.#closed && !options.signal.aborted;
    const subscriber = new Subscriber({
      snapshot: open ? this.#store.list() : [],
      resourceVersion: this.#store.resourceVersion,
      options,
      metrics: this.#metrics,
      detach: (subscriber) => this.#subscribers.delete(subscriber),
    });
    if (open) this.#subscribers.add(subscriber);
    else subscriber.close();
    return subscriber;
  }

  /** Ends every subscription with `closed` (shutdown); later subscriptions start closed. */
  close(): void {
    this.#closed = true;
    for (const subscriber of this.#subscribers) subscriber.close();
    this.#subscribers.clear();
  }
}
