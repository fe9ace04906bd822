/**
 * The data path of the daemon in one place: each pod source's full view is
 * merged with the others' (spec from the richest source, status rebuilt from
 * the runtime), applied to the cache (which diffs it into ADDED, MODIFIED and
 * DELETED events; a new pod the runtime shows before the kubelet does waits
 * briefly for its spec, `new_pod_hold.ts`), recorded by the query engine
 * (its change log and indexes), published to every watcher, and marks its
 * source synced in the gate. One call, {@linkcode PodPipeline.apply}, does all of it, in that
 * order, for one view.
 *
 * @module
 */

import { PodCache, type PodEncoder } from "../cache/mod.ts";
import type { Clock } from "../clock.ts";
import { EventHub } from "../events/mod.ts";
import type { Logger } from "../log.ts";
import { PodMerger } from "../merge/mod.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { PodSnapshot } from "../model/pod.ts";
import type { AllocatableResources, PodResources } from "../model/pod_resources.ts";
import { isRuntime, type PodSourceKind } from "../model/pod_source_kind.ts";
import { type HistoryLimits, NodeDevices, QueryEngine } from "../query/mod.ts";
import { SyncGate } from "../relist/mod.ts";
import { type HoldContext, NewPodHold } from "./new_pod_hold.ts";
import { UnrepresentableCounter } from "./unrepresentable_counter.ts";
import { type JoinResult, ResourceJoiner } from "./resource_join.ts";

/** Options of {@linkcode PodPipeline}. */
export interface PodPipelineOptions {
  /** The kinds of the configured sources: the gate waits for each. */
  sources: readonly PodSourceKind[];
  /** Encodes a pod to its wire bytes (once per content change). */
  encode: PodEncoder;
  clock: Clock;
  metrics: Metrics;
  log: Logger;
  /** How long and how many changes resume tokens stay valid (`--watch-history`). */
  history: HistoryLimits;
  /** How long a deleted pod stays retrievable (`--tombstone-ttl`), ms. */
  tombstoneTtlMs: number;
  /** Most bytes tombstones may hold (`--tombstone-bytes`). @default {the flag's default} */
  tombstoneMaxBytes?: number;
  /** How old a source's last read may get before the daemon is not ready, ms. */
  staleAfterMs?: number;
  /**
   * The longest a new pod the runtime shows first waits for the kubelet's
   * (or the simulated node's) view, so that it is announced with its spec,
   * ms (`new_pod_hold.ts`). @default {0} (never)
   */
  newPodHoldMs?: number;
  /** Told which spec sources new pods wait for: a polled one is worth reading now. */
  onNewPodWait?(kinds: readonly PodSourceKind[]): void;
}

/**
 * Merge, cache, query engine, hub and gate, joined: what the relisters feed
 * and what the servers read.
 *
 * @example Usage
 * ```ts
 * import { PodPipeline } from "./pod_pipeline.ts";
 * import { createMetricsRegistry } from "../metrics/registry.ts";
 * import { silentLogger } from "../log.ts";
 * import { FakeClock } from "../clock.ts";
 * const pipeline = new PodPipeline({
 *   sources: ["fake"],
 *   encode: () => new Uint8Array(),
 *   clock: new FakeClock(0),
 *   metrics: createMetricsRegistry().metrics,
 *   log: silentLogger,
 *   history: { maxAgeMs: 60_000, maxEvents: 1000 },
 *   tombstoneTtlMs: 60_000,
 * });
 * pipeline.apply("fake", [{ uid: "u", pod: { metadata: { uid: "u", name: "n", namespace: "d" } } }]);
 * pipeline.gate.isOpen; // true
 * ```
 */
export class PodPipeline {
  /** The pods as served, keyed by UID (the handlers' `PodStore`). */
  readonly cache: PodCache;
  /** Fans every change out to the watchers. */
  readonly hub: EventHub;
  /** Selections, lookups, resumable history and tombstones over the cache. */
  readonly query: QueryEngine;
  /** Closed until every source has synced; the one record of each source's last success. */
  readonly gate: SyncGate;
  /** The node's allocatable devices and who holds them (podresources). */
  readonly devices: NodeDevices;
  readonly #merger = new PodMerger();
  readonly #joiner = new ResourceJoiner();
  readonly #metrics: Metrics;
  readonly #unrepresentable: UnrepresentableCounter;
  readonly #hold: NewPodHold;
  readonly #holdContext: HoldContext;
  readonly #onNewPodWait: ((kinds: readonly PodSourceKind[]) => void) | undefined;

  /** @param options Sources, encoder, clock, metrics, log and the query engine's limits. */
  constructor(options: PodPipelineOptions) {
    const { clock, metrics } = options;
    this.cache = new PodCache({ encode: options.encode, clock, metrics });
    this.hub = new EventHub({ store: this.cache, metrics });
    this.query = new QueryEngine({
      store: this.cache,
      hub: this.hub,
      clock,
      history: options.history,
      tombstoneTtlMs: options.tombstoneTtlMs,
      ...(options.tombstoneMaxBytes === undefined
        ? {}
        : { tombstoneMaxBytes: options.tombstoneMaxBytes }),
    });
    this.gate = new SyncGate({
      sources: options.sources,
      clock,
      ...(options.staleAfterMs === undefined ? {} : { staleAfter: options.staleAfterMs }),
    });
    this.#unrepresentable = new UnrepresentableCounter({ metrics, log: options.log });
    this.devices = new NodeDevices({ store: this.cache, metrics });
    this.#metrics = metrics;
    this.#hold = new NewPodHold({
      sources: options.sources,
      clock,
      maxHoldMs: options.newPodHoldMs ?? 0,
    });
    this.#holdContext = {
      isServed: (uid) => this.cache.get(uid) !== undefined,
      sourcesOf: (uid) => this.#merger.sourcesOf(uid),
      hasSynced: (kind) => this.gate.lastSuccess(kind) !== undefined,
    };
    this.#onNewPodWait = options.onNewPodWait;
  }

  /**
   * Takes one source's full view through the whole path: merge, cache,
   * query engine, hub, gate.
   *
   * @param source The source's kind.
   * @param snapshots Its full view.
   * @param held The source does not answer and this is its view as it last said.
   */
  apply(source: PodSourceKind, snapshots: readonly PodSnapshot[], held = false): void {
    this.#unrepresentable.check(source, snapshots);
    const merged = this.#merger.update(source, snapshots, held);
    const events = this.cache.apply(this.#hold.admit(source, merged, this.#holdContext));
    // The query engine's log and indexes first: a watcher woken by the hub
    // may resume from, or look up, what it was just told.
    this.query.apply(events);
    this.hub.publish(events);
    this.gate.markSynced(source);
    const ask = this.#hold.takeRequests();
    if (ask.length > 0) this.#onNewPodWait?.(ask);
    // A pod that held devices and went frees them.
    if (events.some((e) => e.type === "DELETED" && e.pod.resources !== undefined)) {
      this.devices.refreshMetrics();
    }
  }

  /**
   * Takes a podresources `List` answer: joins it onto the cached pods (by
   * namespace and name, checking the UID is the pod the kubelet runs) and
   * publishes each pod whose resources changed as a MODIFIED that only
   * watchers asking for resources get. Pod bytes never change.
   *
   * @param entries The kubelet's answer.
   * @returns How its entries joined.
   */
  applyResources(entries: readonly PodResources[]): JoinResult {
    const joined = this.#joiner.join(
      entries,
      this.cache.list(),
      (uid) => !this.#merger.sourcesOf(uid).every(isRuntime),
    );
    const events = this.cache.applyResources(joined.byUid);
    this.query.apply(events);
    this.hub.publish(events);
    const pods = this.#metrics.podResourcesPods;
    pods.set({ join: "matched" }, joined.matched);
    pods.set({ join: "no_pod" }, joined.noPod);
    pods.set({ join: "held_back" }, joined.heldBack);
    if (events.length > 0) this.devices.refreshMetrics();
    return joined;
  }

  /**
   * Takes a `GetAllocatableResources` answer.
   *
   * @param allocatable The node's allocatable resources.
   */
  applyAllocatable(allocatable: AllocatableResources): void {
    this.devices.setAllocatable(allocatable);
  }

  /** Ends every watch (they see the hub close). */
  close(): void {
    this.hub.close();
  }
}
