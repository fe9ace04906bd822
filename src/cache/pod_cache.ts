/**
 * The pod cache: the daemon's one copy of the node's pods, with each pod's
 * encoded bytes and content version. `apply()` takes a source's full view
 * and returns the changes as events, for the hub to fan out.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import { isJsonObject } from "../model/json.ts";
import { type PodObject, podPhase, type PodSnapshot, type PodUid } from "../model/pod.ts";
import { type PodResources, samePodResources } from "../model/pod_resources.ts";
import type { Metrics } from "../metrics/metrics.ts";
import { compareUids, diffPods } from "./diff.ts";
import type { CachedPod, PodEncoder, PodEvent, PodEventType, PodStore } from "./types.ts";
import { enforceInvariants, everRunning, type InvariantKind } from "./_invariants.ts";
import { bytesEqual } from "../bytes_equal.ts";
import { rfc3339 } from "../model/rfc3339.ts";

/** Options of {@linkcode PodCache}. */
export interface PodCacheOptions {
  /** Encodes a pod to its deterministic wire bytes; called once per content change. */
  encode: PodEncoder;
  /** Stamps `deletionTimestamp` on deleted pods. */
  clock: Clock;
  /** Where to count events, corrections and cache size. */
  metrics?: Metrics;
}

/** One stored pod and what the cache remembers about it. */
/** The phases a pod can be in: each is a series of `pods_api_cache_pods_by_phase`, 0 or not. */
const POD_PHASES = ["Pending", "Running", "Succeeded", "Failed", "Unknown"] as const;

interface Entry {
  /** The source's object as last applied: an identical object is skipped unread. */
  input: Readonly<PodObject>;
  cached: CachedPod;
  /** `cached.pod`, under the name the invariant checks read. */
  pod: Readonly<PodObject>;
  everRunning: boolean;
  containers: number;
}

const CONTAINER_LISTS = ["initContainers", "containers", "ephemeralContainers"] as const;

function countContainers(pod: Readonly<PodObject>): number {
  const spec = pod.spec;
  if (!isJsonObject(spec)) return 0;
  let count = 0;
  for (const key of CONTAINER_LISTS) {
    const list = spec[key];
    if (Array.isArray(list)) count += list.length;
  }
  return count;
}

/**
 * Holds the node's pods keyed by UID and turns each full view of them into
 * ADDED, MODIFIED and DELETED events. Work per `apply()` is a pointer
 * comparison per unchanged pod plus one encoding per pod whose object
 * changed; only a change in the encoded bytes makes a new version.
 *
 * @example Usage
 * ```ts
 * import { PodCache } from "./pod_cache.ts";
 * import { FakeClock } from "../clock.ts";
 * const cache = new PodCache({
 *   encode: (pod) => new TextEncoder().encode(JSON.stringify(pod)),
 *   clock: new FakeClock(0),
 * });
 * const pod = { metadata: { uid: "u1", name: "web", namespace: "default" } };
 * const events = cache.apply([{ uid: "u1", pod }]);
 * console.assert(events[0]?.type === "ADDED" && cache.resourceVersion === 1);
 * ```
 */
export class PodCache implements PodStore {
  #encode: PodEncoder;
  #clock: Clock;
  #metrics: Metrics | undefined;
  #entries = new Map<PodUid, Entry>();
  #version = 0;
  #containers = 0;
  /** UIDs in order; `undefined` after a membership change. */
  #sortedUids: PodUid[] | undefined = [];
  /** The `list()` answer; `undefined` after any change. */
  #list: readonly CachedPod[] | undefined = Object.freeze([]);

  /** @param options Encoder, clock and metrics. */
  constructor(options: PodCacheOptions) {
    this.#encode = options.encode;
    this.#clock = options.clock;
    this.#metrics = options.metrics;
  }

  /** Bumped by every change; the `seq` of the newest event (0 before any). */
  get resourceVersion(): number {
    return this.#version;
  }

  /** The number of cached pods. */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * @param uid A pod UID.
   * @returns The cached pod, or `undefined`.
   */
  get(uid: PodUid): CachedPod | undefined {
    return this.#entries.get(uid)?.cached;
  }

  /**
   * @returns Every cached pod sorted by UID; a frozen array that later
   * changes never alter (callers may keep it as a snapshot).
   */
  list(): readonly CachedPod[] {
    if (this.#list !== undefined) return this.#list;
    if (this.#sortedUids === undefined) {
      this.#sortedUids = [...this.#entries.keys()].sort(compareUids);
    }
    const list = this.#sortedUids.map((uid) => this.#entries.get(uid)!.cached);
    this.#list = Object.freeze(list);
    return this.#list;
  }

  /**
   * Replaces the cache's content with a source's full view.
   *
   * @param snapshots Every pod of the view; for a repeated UID the last one counts.
   * @returns The changes, in `seq` order (empty when nothing changed).
   */
  apply(snapshots: readonly PodSnapshot[]): PodEvent[] {
    const diff = diffPods(this.#entries, snapshots);
    if (diff.duplicates > 0) {
      this.#metrics?.sourceItemsRejected.inc(
        { source: "cache", reason: "duplicate_uid" },
        diff.duplicates,
      );
    }
    const events: PodEvent[] = [];
    for (const snapshot of diff.added) events.push(this.#add(snapshot));
    for (const snapshot of diff.replaced) {
      const event = this.#replace(snapshot);
      if (event !== undefined) events.push(event);
    }
    for (const uid of diff.removed) events.push(this.#remove(uid));
    if (events.length > 0) this.#changed(events);
    return events;
  }

  /**
   * Sets what each pod holds according to the kubelet's podresources API.
   * A pod whose resources changed gets a new `CachedPod` with the same pod,
   * bytes and content version, and a MODIFIED event of its own position:
   * only watchers that asked for resources are told (see
   * `isResourcesOnlyChange`); the Pods API's bytes never change.
   *
   * @param byUid Every cached pod's resources; a pod left out holds nothing.
   * @returns The changes, in `seq` order (empty when nothing changed).
   */
  applyResources(byUid: ReadonlyMap<PodUid, PodResources>): PodEvent[] {
    const events: PodEvent[] = [];
    for (const uid of this.#sortedUids ??= [...this.#entries.keys()].sort(compareUids)) {
      const entry = this.#entries.get(uid)!;
      const prev = entry.cached;
      const resources = byUid.get(uid);
      if (samePodResources(prev.resources, resources)) continue;
      const cached: CachedPod = Object.freeze({
        uid,
        pod: prev.pod,
        version: prev.version,
        bytes: prev.bytes,
        resources,
      });
      entry.cached = cached;
      events.push({ type: "MODIFIED", pod: cached, prev, seq: ++this.#version });
    }
    // The pod counts and event metrics are about pods, which did not change.
    if (events.length > 0) this.#list = undefined;
    return events;
  }

  #correct(pod: Readonly<PodObject>, history: Entry | undefined): Readonly<PodObject> {
    const metrics = this.#metrics;
    return enforceInvariants(pod, history, {
      onCorrection: (kind: InvariantKind) => metrics?.invariantCorrections.inc({ kind }),
    });
  }

  #store(
    uid: PodUid,
    pod: Readonly<PodObject>,
    bytes: Uint8Array,
    resources?: PodResources,
  ): CachedPod {
    const version = ++this.#version;
    return Object.freeze(
      resources === undefined
        ? { uid, pod, version, bytes }
        : { uid, pod, version, bytes, resources },
    );
  }

  #add(snapshot: PodSnapshot): PodEvent {
    const pod = this.#correct(snapshot.pod, undefined);
    const cached = this.#store(snapshot.uid, pod, this.#encode(pod));
    const containers = countContainers(pod);
    this.#entries.set(snapshot.uid, {
      input: snapshot.pod,
      cached,
      pod,
      everRunning: everRunning(pod, undefined),
      containers,
    });
    this.#containers += containers;
    this.#sortedUids = undefined;
    return { type: "ADDED", pod: cached, seq: cached.version };
  }

  #replace(snapshot: PodSnapshot): PodEvent | undefined {
    const entry = this.#entries.get(snapshot.uid)!;
    entry.input = snapshot.pod;
    const pod = this.#correct(snapshot.pod, entry);
    const bytes = this.#encode(pod);
    const prev = entry.cached;
    if (bytesEqual(bytes, prev.bytes)) return undefined;
    // A new pod version keeps what the pod holds until the next podresources answer.
    const cached = this.#store(snapshot.uid, pod, bytes, prev.resources);
    const containers = countContainers(pod);
    this.#containers += containers - entry.containers;
    entry.containers = containers;
    entry.everRunning = everRunning(pod, entry);
    entry.cached = cached;
    entry.pod = pod;
    return { type: "MODIFIED", pod: cached, prev, seq: cached.version };
  }

  #remove(uid: PodUid): PodEvent {
    const entry = this.#entries.get(uid)!;
    const prev = entry.cached;
    let pod = prev.pod;
    let bytes = prev.bytes;
    if (typeof pod.metadata.deletionTimestamp !== "string") {
      const deletionTimestamp = rfc3339(this.#clock.now());
      pod = { ...pod, metadata: { ...pod.metadata, deletionTimestamp } };
      bytes = this.#encode(pod);
    }
    // The tombstone shows what the pod held when it went.
    const cached = this.#store(uid, pod, bytes, prev.resources);
    this.#entries.delete(uid);
    this.#containers -= entry.containers;
    this.#sortedUids = undefined;
    return { type: "DELETED", pod: cached, prev, seq: cached.version };
  }

  #changed(events: readonly PodEvent[]): void {
    this.#list = undefined;
    const metrics = this.#metrics;
    if (metrics === undefined) return;
    const counts: Record<PodEventType, number> = { ADDED: 0, MODIFIED: 0, DELETED: 0 };
    for (const event of events) counts[event.type]++;
    for (const [type, count] of Object.entries(counts)) {
      if (count > 0) metrics.podEvents.inc({ type }, count);
    }
    metrics.cachePods.set(this.#entries.size);
    metrics.cacheContainers.set(this.#containers);
    const phases = new Map<string, number>(POD_PHASES.map((p) => [p, 0]));
    for (const entry of this.#entries.values()) {
      const phase = podPhase(entry.pod) ?? "Unknown";
      phases.set(phase, (phases.get(phase) ?? 0) + 1);
    }
    for (const [phase, n] of phases) metrics.cachePodsByPhase.set({ phase }, n);
  }
}
