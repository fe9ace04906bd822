/**
 * The query engine: selections, lookups, resume tokens, tombstones and
 * selected watches over the pod cache. Fed with every batch of cache events
 * (before the hub publishes them) and reading the hub for live watches; it
 * knows neither the container runtime nor any transport, so the gRPC
 * `PodQuery` service and the Kubernetes-compatible HTTP surface share it.
 *
 * @module
 */

import {
  type CachedPod,
  isResourcesOnlyChange,
  type PodEvent,
  type PodStore,
} from "../cache/types.ts";
import type { CancelTimer, Clock } from "../clock.ts";
import type { EventHub, Subscription, SubscriptionItem } from "../events/mod.ts";
import type { Surface } from "../metrics/metrics.ts";
import { podPhase, type PodUid } from "../model/pod.ts";
import { numericDefault } from "../config_flags.ts";
import { ChangeLog, type HistoryLimits, newIncarnation, retainedBytes } from "./change_log.ts";
import { LookupError, WatchDroppedError } from "./errors.ts";
import { DeviceIndex } from "./device_index.ts";
import { PodIndex, quote } from "./pod_index.ts";
import type { PodSelector } from "./selector.ts";

/** Options of {@linkcode QueryEngine}. */
export interface QueryEngineOptions {
  store: PodStore;
  hub: EventHub;
  clock: Clock;
  /** How long and how many changes resume tokens stay valid (`--watch-history`). */
  history: HistoryLimits;
  /** How long a deleted pod stays retrievable (`--tombstone-ttl`), ms. */
  tombstoneTtlMs: number;
  /**
   * Most bytes tombstones may hold, counted as the history counts pod
   * versions; the oldest go first. @default {`--tombstone-bytes`'s}
   */
  tombstoneMaxBytes?: number;
  /** Names this daemon run in tokens. @default {a random name} */
  incarnation?: string;
}

/** How Get names a pod (DESIGN.md §14 `GetRequest.key`). */
export type LookupKey =
  | { readonly kind: "uid"; readonly uid: string }
  | { readonly kind: "name"; readonly namespace: string; readonly name: string }
  | { readonly kind: "containerId"; readonly id: string }
  | { readonly kind: "podIp"; readonly ip: string }
  /** A device the pod holds (podresources): plugin ID, DRA device or CDI name. */
  | { readonly kind: "deviceId"; readonly id: string };

/** A pod found by {@linkcode QueryEngine.lookup}. */
export interface LookupResult {
  readonly pod: CachedPod;
  /** `true` for a tombstone: the pod's last state before it was deleted. */
  readonly deleted: boolean;
}

/** What a selected watch yields. */
export type WatchItemType =
  | "ADDED"
  | "MODIFIED"
  | "DELETED"
  | "INITIAL_SYNC_COMPLETE"
  | "BOOKMARK";

/** One item of a selected watch. */
export interface WatchItem {
  readonly type: WatchItemType;
  /** The pod to send; absent for INITIAL_SYNC_COMPLETE and BOOKMARK. */
  readonly pod: CachedPod | undefined;
  /**
   * The position a client has seen everything up to once it has this item
   * (0 for the ADDED items of an initial list: resuming inside it would skip pods).
   */
  readonly position: number;
}

/** Options of {@linkcode QueryEngine.openWatch}. */
export interface QueryWatchOptions {
  selector: PodSelector;
  /** Empty or absent: the initial list first; else the changes after this token. */
  resumeToken?: string;
  /** > 0: a BOOKMARK when nothing else was sent for this long, ms. */
  bookmarkMs?: number;
  /** Ends the watch (client cancel, deadline, shutdown). */
  signal: AbortSignal;
  /** Events pending before the watcher is dropped. @default {DEFAULT_QUEUE_LIMIT} (the hub's) */
  queueLimit?: number;
  /** Label of the dropped-watcher metric. */
  apiVersion?: Surface;
  /**
   * Whether a change between two versions of a selected pod is worth
   * sending (a masked watch: only when a masked field changed).
   */
  visible?: (prev: CachedPod, pod: CachedPod) => boolean;
  /**
   * Also send a MODIFIED when only what a selected pod holds (podresources)
   * changed. Without it such changes are never sent.
   */
  resources?: boolean;
}

/** An opened watch: its items, in order, until it ends. */
export interface QueryWatch extends AsyncIterable<WatchItem> {
  /** The position the watch starts from. */
  readonly position: number;
  /**
   * The same items in the same order, a batch at a time: the initial list
   * (or the changes after a resume token) in batches of at most
   * {@linkcode WATCH_BATCH_ITEMS}, then every change already queued when
   * the watcher comes back for more. Iterate one or the other, not both.
   */
  batches(): AsyncIterable<readonly WatchItem[]>;
}

/**
 * Most items of the initial list in one batch: a batch is made when the
 * watcher asks for it, so a thousand watchers syncing at once do not each
 * hold their whole list of items.
 */
export const WATCH_BATCH_ITEMS = 128;

interface Tombstone {
  readonly pod: CachedPod;
  readonly expires: number;
  readonly bytes: number;
}

const TERMINAL = new Set(["Succeeded", "Failed"]);
const SELECTION_MEMO_LIMIT = 64;

/**
 * Turns a cache event into what a selected watcher sees: a pod entering the
 * selection is ADDED, one leaving it is DELETED (its last selected state).
 *
 * @param event A cache event (possibly coalesced: `prev` is the state the watcher last saw).
 * @param selector The watch's selection.
 * @returns The item to send, or `undefined` when the watcher sees nothing.
 */
export function selectEvent(event: PodEvent, selector: PodSelector): WatchItem | undefined {
  const now = selector.matches(event.pod.pod, event.pod.resources);
  const before = event.prev === undefined
    ? false
    : selector.matches(event.prev.pod, event.prev.resources);
  switch (event.type) {
    case "ADDED":
      return now ? { type: "ADDED", pod: event.pod, position: event.seq } : undefined;
    case "MODIFIED":
      if (before && now) return { type: "MODIFIED", pod: event.pod, position: event.seq };
      if (now) return { type: "ADDED", pod: event.pod, position: event.seq };
      if (before) return { type: "DELETED", pod: event.prev, position: event.seq };
      return undefined;
    case "DELETED": {
      // The watcher knows the pod iff the state it last saw (`prev`) was
      // selected: one that entered and left within a coalesced event is news to nobody.
      const seen = event.prev === undefined ? now : before;
      return seen ? { type: "DELETED", pod: event.pod, position: event.seq } : undefined;
    }
  }
}

function newer(a: CachedPod, b: CachedPod): CachedPod {
  const ta = a.pod.metadata.creationTimestamp ?? "";
  const tb = b.pod.metadata.creationTimestamp ?? "";
  if (ta !== tb) return ta > tb ? a : b;
  return a.version >= b.version ? a : b;
}

/** The pod a user means among several with one key: running before finished, then newest. */
function best(pods: readonly CachedPod[]): CachedPod | undefined {
  let chosen: CachedPod | undefined;
  for (const pod of pods) {
    if (chosen === undefined) {
      chosen = pod;
      continue;
    }
    const a = TERMINAL.has(podPhase(chosen.pod) ?? "");
    const b = TERMINAL.has(podPhase(pod.pod) ?? "");
    if (a !== b) chosen = a ? pod : chosen;
    else chosen = newer(chosen, pod);
  }
  return chosen;
}

/**
 * The ADDED items of an initial list, made once per list: watchers that
 * connect together share them instead of each allocating an item per pod
 * (items are read-only). They go when the list goes.
 *
 * @param list A subscription's snapshot (the store's list of its version).
 * @param shared Items made for lists before.
 * @returns One ADDED item per pod, in the list's order.
 */
function addedItemsOf(
  list: readonly CachedPod[],
  shared: WeakMap<readonly CachedPod[], readonly WatchItem[]>,
): readonly WatchItem[] {
  let items = shared.get(list);
  if (items === undefined) {
    const made: WatchItem[] = new Array(list.length);
    for (let i = 0; i < list.length; i++) made[i] = { type: "ADDED", pod: list[i], position: 0 };
    shared.set(list, made);
    items = made;
  }
  return items;
}

/** Selections, lookups, history and selected watches over the cache. */
export class QueryEngine {
  #store: PodStore;
  #hub: EventHub;
  #clock: Clock;
  #log: ChangeLog;
  #livePods = new PodIndex();
  #tombstonePods = new PodIndex();
  #liveDevices = new DeviceIndex();
  #tombstoneDevices = new DeviceIndex();
  #tombstones = new Map<PodUid, Tombstone>();
  #tombstoneTtlMs: number;
  #tombstoneMaxBytes: number;
  #tombstoneBytes = 0;
  #memo = new Map<string, { list: readonly CachedPod[]; selected: readonly CachedPod[] }>();
  /** The ADDED items of each list a watch started from, while the list lives. */
  #added = new WeakMap<readonly CachedPod[], readonly WatchItem[]>();

  /** @param options Store, hub, clock, history limits and tombstone TTL. */
  constructor(options: QueryEngineOptions) {
    this.#store = options.store;
    this.#hub = options.hub;
    this.#clock = options.clock;
    this.#tombstoneTtlMs = options.tombstoneTtlMs;
    this.#tombstoneMaxBytes = options.tombstoneMaxBytes ?? numericDefault("tombstone-bytes");
    this.#log = new ChangeLog({
      ...options.history,
      clock: options.clock,
      incarnation: options.incarnation ?? newIncarnation(),
      start: options.store.resourceVersion,
    });
    for (const pod of options.store.list()) {
      this.#livePods.put(pod);
      this.#liveDevices.put(pod);
    }
  }

  /** This daemon run's name in tokens. */
  get incarnation(): string {
    return this.#log.incarnation;
  }

  /** The newest position (the cache's resourceVersion as last applied). */
  get position(): number {
    return this.#log.position;
  }

  /** Events retained for resuming. */
  get historySize(): number {
    return this.#log.size;
  }

  /** Memory the resumable history holds (estimated; see `retainedBytes`). */
  get historyBytes(): number {
    return this.#log.bytes;
  }

  /** Tombstones held. */
  get tombstones(): number {
    this.#pruneTombstones();
    return this.#tombstones.size;
  }

  /** Memory the tombstones hold (estimated as for the history). */
  get tombstoneBytes(): number {
    return this.#tombstoneBytes;
  }

  /**
   * Takes a batch of cache events: indexes, log and tombstones follow.
   * Call it with every batch, in order, before the hub publishes it.
   *
   * @param events The events of one `PodCache.apply()`.
   */
  apply(events: readonly PodEvent[]): void {
    if (events.length === 0) return;
    const now = this.#clock.now();
    for (const event of events) {
      const uid = event.pod.uid;
      if (event.type === "DELETED") {
        this.#livePods.delete(uid);
        this.#liveDevices.delete(uid);
        this.#dropTombstone(uid);
        const bytes = retainedBytes(event.pod);
        this.#tombstones.set(uid, { pod: event.pod, expires: now + this.#tombstoneTtlMs, bytes });
        this.#tombstoneBytes += bytes;
        this.#tombstonePods.put(event.pod);
        this.#tombstoneDevices.put(event.pod);
      } else {
        this.#livePods.put(event.pod);
        this.#liveDevices.put(event.pod);
        this.#dropTombstone(uid);
      }
    }
    this.#log.append(events);
    this.#pruneTombstones();
  }

  /**
   * @param position A position.
   * @returns Its resume token.
   */
  token(position: number): string {
    return this.#log.token(position);
  }

  /**
   * Reads a resume token (for callers that check one before streaming).
   *
   * @param token A resume token.
   * @returns Its position.
   * @throws {ResumeTokenError} When it is malformed or too old.
   */
  positionOf(token: string): number {
    return this.#log.parse(token);
  }

  /**
   * The selected pods, sorted by UID. Repeated selections of an unchanged
   * cache return the same array.
   *
   * @param selector The selection.
   * @returns The pods (a frozen array; never changes).
   */
  list(selector: PodSelector): readonly CachedPod[] {
    const all = this.#store.list();
    if (selector.isAll) return all;
    const memo = this.#memo.get(selector.key);
    if (memo !== undefined && memo.list === all) return memo.selected;
    const selected = Object.freeze(all.filter((p) => selector.matches(p.pod, p.resources)));
    this.#memo.delete(selector.key);
    this.#memo.set(selector.key, { list: all, selected });
    if (this.#memo.size > SELECTION_MEMO_LIMIT) {
      this.#memo.delete(this.#memo.keys().next().value!);
    }
    return selected;
  }

  /**
   * Finds one pod by UID, name, container ID or IP.
   *
   * @param key The lookup key.
   * @param includeDeleted Fall back to tombstones of deleted pods.
   * @returns The pod, or `undefined` when none has that key.
   * @throws {LookupError} For a malformed IP or a short or ambiguous container ID prefix.
   */
  lookup(key: LookupKey, includeDeleted = false): LookupResult | undefined {
    const live = this.#find(this.#livePods, this.#liveDevices, key, (uid) => this.#store.get(uid));
    if (live !== undefined) return { pod: live, deleted: false };
    if (!includeDeleted) return undefined;
    this.#pruneTombstones();
    const dead = this.#find(
      this.#tombstonePods,
      this.#tombstoneDevices,
      key,
      (uid) => this.#tombstones.get(uid)?.pod,
    );
    return dead === undefined ? undefined : { pod: dead, deleted: true };
  }

  /**
   * Opens a selected watch: subscribes to the hub and checks the resume
   * token at once (so a bad token fails before anything is sent).
   *
   * @param options Selection, token, bookmarks, signal and queue bound.
   * @returns The watch; iterate it to get its items.
   * @throws {ResumeTokenError} For a malformed or too old token.
   */
  openWatch(options: QueryWatchOptions): QueryWatch {
    const token = options.resumeToken ?? "";
    const from = token === "" ? undefined : this.#log.parse(token);
    const { selector, visible } = options;
    const resources = options.resources === true;
    const accept = (event: PodEvent): boolean => {
      const prev = event.prev;
      if (prev === undefined) return true;
      const resourcesOnly = isResourcesOnlyChange(event);
      // Without resources asked for, an allocation change is news only when
      // it moves a pod into or out of a selection made on what pods hold.
      if (resourcesOnly && !resources && !selector.usesResources) return false;
      const before = selector.matches(prev.pod, prev.resources);
      const now = selector.matches(event.pod.pod, event.pod.resources);
      if (before !== now) return true;
      if (!now) return false;
      if (resourcesOnly) return resources;
      return visible === undefined || visible(prev, event.pod) ||
        (resources && prev.resources !== event.pod.resources);
    };
    const subscription = this.#hub.subscribe({
      signal: options.signal,
      resources: resources || selector.usesResources,
      queueLimit: options.queueLimit,
      deferLimitUntilLive: true,
      accept,
      ...(options.apiVersion === undefined ? {} : { apiVersion: options.apiVersion }),
    });
    // Taken in the same tick as the subscription: no change falls between.
    const replay = from === undefined
      ? undefined
      : this.#log.since(from, subscription.resourceVersion);
    const shared = this.#added;
    const bookmarkMs = options.bookmarkMs ?? 0;
    const store = this.#store;
    const clock = this.#clock;
    // One turn of the event loop per batch, not per item: a watcher's
    // initial list goes to its sink without waiting between pods.
    async function* batches(): AsyncGenerator<readonly WatchItem[]> {
      let batch: WatchItem[] = [];
      let added = replay === undefined ? addedItemsOf(subscription.snapshot, shared) : [];
      if (replay === undefined && selector.isAll) {
        // Every pod: each batch is a slice of the shared items.
        for (let i = 0; i < added.length; i += WATCH_BATCH_ITEMS) {
          batch = added.slice(i, i + WATCH_BATCH_ITEMS);
          if (batch.length === WATCH_BATCH_ITEMS) {
            yield batch;
            batch = [];
          }
        }
      } else if (replay === undefined) {
        for (let i = 0; i < added.length; i++) {
          const item = added[i]!;
          if (!selector.matches(item.pod!.pod, item.pod!.resources)) continue;
          batch.push(item);
          if (batch.length === WATCH_BATCH_ITEMS) {
            yield batch;
            batch = [];
          }
        }
      }
      if (replay === undefined) {
        batch.push({
          type: "INITIAL_SYNC_COMPLETE",
          pod: undefined,
          position: subscription.resourceVersion,
        });
      } else {
        for (const event of replay) {
          if (event.type === "MODIFIED" && !accept(event)) continue;
          const item = selectEvent(event, selector);
          if (item === undefined) continue;
          batch.push(item);
          if (batch.length === WATCH_BATCH_ITEMS) {
            yield batch;
            batch = [];
          }
        }
      }
      if (batch.length > 0) yield batch;
      // Not held while the watch is live: a suspended generator keeps its
      // variables, and the last batch of the list (and the list's items)
      // would live, promoted to the old generation, as long as the watcher.
      batch = [];
      added = [];
      subscription.markLive();
      yield* live(subscription, selector, store, { bookmarkMs, clock });
    }
    async function* items(): AsyncGenerator<WatchItem> {
      // Not `yield*` of the batch: that takes extra turns of the event loop
      // between batches, and the watch would go live a few turns late.
      for await (const batch of batches()) for (const item of batch) yield item;
    }
    return { position: subscription.resourceVersion, batches, [Symbol.asyncIterator]: items };
  }

  #find(
    index: PodIndex,
    devices: DeviceIndex,
    key: LookupKey,
    get: (uid: PodUid) => CachedPod | undefined,
  ): CachedPod | undefined {
    let uids: readonly PodUid[];
    switch (key.kind) {
      case "uid":
        return get(key.uid);
      case "deviceId": {
        const holders = devices.byDevice(key.id).map(get).filter((p) => p !== undefined);
        if (holders.length > 1) {
          // A shared DRA claim: no one pod is "the" holder.
          throw new LookupError(
            `Cannot look up device ${
              quote(key.id)
            }: ${holders.length} pods hold it (a shared claim); select them with selector.device_id`,
          );
        }
        return holders[0];
      }
      case "name":
        uids = index.byName(key.namespace, key.name);
        break;
      case "containerId":
        uids = index.byContainerId(key.id);
        break;
      case "podIp":
        uids = index.byIp(key.ip);
        break;
    }
    const pods: CachedPod[] = [];
    for (const uid of uids) {
      const pod = get(uid);
      if (pod !== undefined) pods.push(pod);
    }
    return best(pods);
  }

  /** Forgets a pod's tombstone, if it has one, with its index entries and bytes. */
  #dropTombstone(uid: PodUid): void {
    const tomb = this.#tombstones.get(uid);
    if (tomb === undefined) return;
    this.#tombstones.delete(uid);
    this.#tombstonePods.delete(uid);
    this.#tombstoneDevices.delete(uid);
    this.#tombstoneBytes -= tomb.bytes;
  }

  #pruneTombstones(): void {
    const now = this.#clock.now();
    // Oldest first (insertion order): expired, or over the byte bound.
    for (const [uid, tomb] of this.#tombstones) {
      if (tomb.expires > now && this.#tombstoneBytes <= this.#tombstoneMaxBytes) break;
      this.#dropTombstone(uid);
    }
  }
}

/** The live part of a watch: hub events through the selection, plus bookmarks. */
async function* live(
  subscription: Subscription,
  selector: PodSelector,
  store: PodStore,
  bookmarks: { readonly bookmarkMs: number; readonly clock: Clock },
): AsyncGenerator<readonly WatchItem[]> {
  const { bookmarkMs, clock } = bookmarks;
  let pending: Promise<SubscriptionItem> | undefined;
  // Bookmarks keep time from the last item sent: changes filtered out by
  // the selection must not postpone them forever.
  let lastSent = clock.now();
  for (;;) {
    pending ??= subscription.next();
    let item: SubscriptionItem;
    if (bookmarkMs > 0) {
      const tick = Promise.withResolvers<number>();
      // A wall clock stepped back waits one period at most.
      const wait = Math.min(bookmarkMs, Math.max(0, lastSent + bookmarkMs - clock.now()));
      // The position is read when the timer fires: had an event been
      // delivered before, `pending` would have settled first and won the race.
      // Overdue (the timer fired but a change the selection filters out won),
      // the same race is run at once: a queued event still goes first.
      let cancel: CancelTimer | undefined;
      if (wait === 0) tick.resolve(store.resourceVersion);
      else cancel = clock.setTimer(wait, () => tick.resolve(store.resourceVersion));
      const winner = await Promise.race([pending, tick.promise]);
      cancel?.();
      if (typeof winner === "number") {
        yield [{ type: "BOOKMARK", pod: undefined, position: winner }];
        lastSent = clock.now();
        continue;
      }
      item = winner;
    } else {
      item = await pending;
    }
    pending = undefined;
    if (item.state === "dropped") throw new WatchDroppedError(item.lost);
    if (item.state === "closed") return;
    // What else is queued already goes with it, in order.
    const batch: WatchItem[] = [];
    for (let event: PodEvent | undefined = item.event; event; event = subscription.poll()) {
      const selected = selectEvent(event, selector);
      if (selected !== undefined) batch.push(selected);
    }
    if (batch.length > 0) {
      yield batch;
      lastSent = clock.now();
    }
  }
}
