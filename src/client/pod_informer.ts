/**
 * A shared-informer for the node's pods, as client-go's: it lists, then
 * watches, keeps a local store that handlers and readers share, and keeps
 * going through daemon restarts, dropped connections and back-pressure.
 *
 * The list is the watch's own initial list (`WatchPods` sends every pod,
 * then INITIAL_SYNC_COMPLETE), so no change can fall between a list and a
 * watch. After a reconnect the fresh list is reconciled with the store the
 * way client-go's `Replace` does: pods that are gone are deleted, new ones
 * added, changed ones updated, so handlers see every pod's life in order.
 *
 * @module
 */

import { GrpcError, STATUS } from "../grpc/status.ts";
import type { PodObject, PodUid } from "../model/pod.ts";
import { abortableSleep, type Sleep } from "../sleep.ts";
import { Backoff, type BackoffOptions } from "./backoff.ts";
import type { PodsClient } from "./pods_client.ts";

/** What a handler is told; each method optional. */
export interface PodEventHandler {
  /** A pod appeared (or was already there when the informer started). */
  onAdd?(pod: PodObject): void;
  /** A pod changed; `oldPod` is the version the handlers saw last. */
  onUpdate?(oldPod: PodObject, newPod: PodObject): void;
  /**
   * A pod went away. `pod` is its last state; `finalStateUnknown` is true
   * when the deletion was found by a relist after a gap, so changes during
   * the gap were not seen (client-go's `DeletedFinalStateUnknown`).
   */
  onDelete?(pod: PodObject, finalStateUnknown: boolean): void;
}

/** Why the informer is waiting before it connects again. */
export interface InformerRetry {
  /** The error that ended the last attempt. */
  readonly error: unknown;
  /** How long it waits, ms. */
  readonly delayMs: number;
  /** Attempts since the last successful sync. */
  readonly attempt: number;
}

/** Options of {@linkcode PodInformer}. */
export interface PodInformerOptions {
  /** Field mask paths; empty: whole pods. */
  fields?: readonly string[];
  /** Delays between reconnects. @default {{ initialMs: 200, maxMs: 10000, jitter: 0.5 }} */
  backoff?: BackoffOptions;
  /** Told before each wait (log it, count it). */
  onRetry?(retry: InformerRetry): void;
  /**
   * Told each time a complete list has been reconciled with the store (its
   * handler calls done): `relist` is false the first time.
   */
  onSync?(relist: boolean): void;
  /** Waits between attempts; injected by tests. @default {abortableSleep} */
  sleep?: Sleep;
}

/** Counters of an informer's life. */
export interface InformerStats {
  /** Watches opened. */
  connects: number;
  /** Initial lists reconciled with a non-empty store (after a reconnect). */
  relists: number;
  /** Attempts that ended in an error. */
  failures: number;
}

/**
 * Errors that retrying cannot fix: a malformed mask stays malformed. Every
 * other ending (daemon gone, shutting down, still syncing, RESOURCE_EXHAUSTED
 * for a slow or surplus watcher) is a reason to back off and try again.
 */
const FATAL_CODES: ReadonlySet<number> = new Set([
  STATUS.INVALID_ARGUMENT,
  STATUS.UNIMPLEMENTED,
  STATUS.PERMISSION_DENIED,
  STATUS.UNAUTHENTICATED,
]);

/**
 * Keeps a local copy of the node's pods and tells handlers of every change.
 *
 * @example Usage
 * ```ts
 * import { PodInformer, PodsClient } from "./mod.ts";
 * using client = new PodsClient({ socket: "/var/lib/kubelet/pods-api/pods-api.sock" });
 * const informer = new PodInformer(client);
 * informer.addEventHandler({
 *   onAdd: (pod) => console.log("added", pod.metadata.name),
 *   onUpdate: (_old, pod) => console.log("updated", pod.metadata.name, pod.status?.phase),
 *   onDelete: (pod) => console.log("deleted", pod.metadata.name),
 * });
 * const stop = new AbortController();
 * const running = informer.run(stop.signal);
 * await informer.waitForSync(stop.signal);
 * console.log(informer.list().length, "pods");
 * stop.abort();
 * await running;
 * ```
 */
export class PodInformer {
  readonly #client: PodsClient;
  readonly #fields: readonly string[] | undefined;
  readonly #backoff: Backoff;
  readonly #onRetry: ((retry: InformerRetry) => void) | undefined;
  readonly #onSync: ((relist: boolean) => void) | undefined;
  readonly #sleep: Sleep;
  readonly #store = new Map<PodUid, PodObject>();
  readonly #handlers: PodEventHandler[] = [];
  readonly #syncWaiters: Array<() => void> = [];
  #synced = false;
  /** Statistics since construction. */
  readonly stats: InformerStats = { connects: 0, relists: 0, failures: 0 };

  /**
   * Creates an informer; nothing happens until {@linkcode PodInformer.run}.
   *
   * @param client The connection to use.
   * @param options Field mask, backoff and retry observer.
   */
  constructor(client: PodsClient, options: PodInformerOptions = {}) {
    this.#client = client;
    this.#fields = options.fields;
    this.#backoff = new Backoff(options.backoff ?? {});
    this.#onRetry = options.onRetry;
    this.#onSync = options.onSync;
    this.#sleep = options.sleep ?? abortableSleep;
  }

  /**
   * Adds a handler. Pods already in the store are replayed to its `onAdd`,
   * as client-go does for a handler added late.
   *
   * @param handler The callbacks.
   * @returns A function that removes the handler.
   */
  addEventHandler(handler: PodEventHandler): () => void {
    this.#handlers.push(handler);
    for (const pod of this.#store.values()) handler.onAdd?.(pod);
    return () => {
      const i = this.#handlers.indexOf(handler);
      if (i >= 0) this.#handlers.splice(i, 1);
    };
  }

  /**
   * Shorthand for `addEventHandler({ onAdd })`.
   *
   * @param fn Called with each added pod.
   * @returns A function that removes the handler.
   */
  onAdd(fn: (pod: PodObject) => void): () => void {
    return this.addEventHandler({ onAdd: fn });
  }

  /**
   * Shorthand for `addEventHandler({ onUpdate })`.
   *
   * @param fn Called with the previous and the new version of a pod.
   * @returns A function that removes the handler.
   */
  onUpdate(fn: (oldPod: PodObject, newPod: PodObject) => void): () => void {
    return this.addEventHandler({ onUpdate: fn });
  }

  /**
   * Shorthand for `addEventHandler({ onDelete })`.
   *
   * @param fn Called with each deleted pod's last state.
   * @returns A function that removes the handler.
   */
  onDelete(fn: (pod: PodObject, finalStateUnknown: boolean) => void): () => void {
    return this.addEventHandler({ onDelete: fn });
  }

  /** @returns Whether the store has held a complete list at least once. */
  hasSynced(): boolean {
    return this.#synced;
  }

  /**
   * Waits until {@linkcode PodInformer.hasSynced}.
   *
   * @param signal Stops waiting.
   * @returns Resolves once synced (or when `signal` aborts).
   */
  waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.#synced || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        signal?.removeEventListener("abort", done);
        resolve();
      };
      this.#syncWaiters.push(done);
      signal?.addEventListener("abort", done, { once: true });
    });
  }

  /** @returns The pods in the store, sorted by namespace and name. */
  list(): PodObject[] {
    return [...this.#store.values()].sort((a, b) =>
      a.metadata.namespace.localeCompare(b.metadata.namespace) ||
      a.metadata.name.localeCompare(b.metadata.name)
    );
  }

  /**
   * @param uid A pod UID.
   * @returns The stored pod, or `undefined`.
   */
  get(uid: PodUid): PodObject | undefined {
    return this.#store.get(uid);
  }

  /**
   * Lists, watches and reconnects until `signal` aborts.
   *
   * @param signal Stops the informer.
   * @returns Resolves when stopped.
   * @throws {GrpcError} For an error retrying cannot fix (INVALID_ARGUMENT for a bad mask).
   */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        await this.#watchOnce(signal);
      } catch (err) {
        if (signal.aborted) return;
        if (err instanceof GrpcError && FATAL_CODES.has(err.code)) throw err;
        this.stats.failures++;
        const delayMs = this.#backoff.next();
        this.#onRetry?.({ error: err, delayMs, attempt: this.#backoff.attempts });
        await this.#sleep(delayMs, signal);
        continue;
      }
      if (signal.aborted) return;
      // The daemon ended the stream cleanly (it should not): come back soon, not at once.
      this.stats.failures++;
      const delayMs = this.#backoff.next();
      this.#onRetry?.({
        error: new GrpcError(STATUS.UNAVAILABLE, "the watch ended"),
        delayMs,
        attempt: this.#backoff.attempts,
      });
      await this.#sleep(delayMs, signal);
    }
  }

  async #watchOnce(signal: AbortSignal): Promise<void> {
    this.stats.connects++;
    const options = this.#fields === undefined ? { signal } : { signal, fields: this.#fields };
    let initial: Map<PodUid, PodObject> | undefined = new Map();
    for await (const event of this.#client.watchPods(options)) {
      if (initial !== undefined) {
        if (event.type === "INITIAL_SYNC_COMPLETE") {
          const relist = this.#synced;
          this.#replace(initial);
          initial = undefined;
          this.#backoff.reset();
          this.#markSynced();
          this.#onSync?.(relist);
        } else if (event.pod !== undefined) {
          if (event.type === "DELETED") initial.delete(event.pod.metadata.uid);
          else initial.set(event.pod.metadata.uid, event.pod);
        }
        continue;
      }
      if (event.pod === undefined) continue;
      if (event.type === "DELETED") this.#delete(event.pod, false);
      else this.#upsert(event.pod);
    }
  }

  #markSynced(): void {
    if (this.#synced) return;
    this.#synced = true;
    for (const wake of this.#syncWaiters.splice(0)) wake();
  }

  /** Reconciles the store with a complete list. */
  #replace(fresh: ReadonlyMap<PodUid, PodObject>): void {
    if (this.#store.size > 0) this.stats.relists++;
    for (const [uid, pod] of [...this.#store]) {
      if (!fresh.has(uid)) this.#delete(pod, true);
    }
    for (const uid of [...fresh.keys()].sort()) this.#upsert(fresh.get(uid)!);
  }

  #upsert(pod: PodObject): void {
    const uid = pod.metadata.uid;
    const old = this.#store.get(uid);
    if (old !== undefined && samePod(old, pod)) return;
    this.#store.set(uid, pod);
    for (const h of [...this.#handlers]) {
      if (old === undefined) h.onAdd?.(pod);
      else h.onUpdate?.(old, pod);
    }
  }

  #delete(pod: PodObject, finalStateUnknown: boolean): void {
    const uid = pod.metadata.uid;
    if (!this.#store.has(uid)) return;
    this.#store.delete(uid);
    for (const h of [...this.#handlers]) h.onDelete?.(pod, finalStateUnknown);
  }
}

function samePod(a: PodObject, b: PodObject): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
