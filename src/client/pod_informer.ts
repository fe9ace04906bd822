/**
 * A shared-informer for the node's pods, as client-go's: it lists, then
 * watches, keeps a local store that handlers and readers share, and keeps
 * going through daemon restarts, dropped connections and back-pressure.
 *
 * On a pods-api daemon it uses `podsapi.v1.PodQuery`: the list is the
 * watch's own initial list, and after a dropped connection the watch
 * resumes from the last resume token, so handlers see exactly the changes
 * they missed, without a relist. It relists only when the daemon says the
 * token is too old or from an earlier run (OUT_OF_RANGE), and on a daemon
 * without PodQuery (UNIMPLEMENTED: a kubelet) it watches `v1alpha1.Pods`
 * and relists after each reconnect. A relist is reconciled with the store
 * as client-go's `Replace` does: pods that are gone are deleted, new ones
 * added, changed ones updated, so each pod's story stays in order.
 *
 * @module
 */

import { GrpcError, STATUS } from "../grpc/status.ts";
import type { PodObject, PodUid } from "../model/pod.ts";
import { compileSelector, type PodSelector } from "../query/mod.ts";
import { abortableSleep, type Sleep } from "../sleep.ts";
import { Backoff, type BackoffOptions } from "./backoff.ts";
import { PodQueryClient, type PodSelection } from "./pod_query_client.ts";
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
  /** Attempts since the last successful (re)sync. */
  readonly attempt: number;
}

/** Which service an informer watches. */
export type InformerApi = "PodQuery" | "v1alpha1.Pods";

/** Options of {@linkcode PodInformer}. */
export interface PodInformerOptions {
  /** Field mask paths; default: the client's. */
  fields?: readonly string[];
  /**
   * Namespace, label and field selectors. PodQuery selects on the daemon;
   * over `v1alpha1.Pods` the informer applies them itself, with the same
   * meaning (a pod that stops matching is deleted from the store).
   */
  selector?: PodSelection;
  /**
   * The service: `auto` tries PodQuery and falls back to `v1alpha1.Pods`
   * on UNIMPLEMENTED. @default {"auto"}
   */
  api?: "auto" | InformerApi;
  /** PodQuery bookmarks keep the resume token fresh on a quiet node. @default {30} */
  bookmarkSeconds?: number;
  /** Delays between reconnects. @default {{ initialMs: 200, maxMs: 10000, jitter: 0.5 }} */
  backoff?: BackoffOptions;
  /** Told before each wait (log it, count it). */
  onRetry?(retry: InformerRetry): void;
  /**
   * Told each time a complete list has been reconciled with the store (its
   * handler calls done): `relist` is false the first time.
   */
  onSync?(relist: boolean): void;
  /** Told each time a watch resumed from the last token after a reconnect. */
  onResume?(): void;
  /** Waits between attempts; injected by tests. @default {abortableSleep} */
  sleep?: Sleep;
}

/** Counters of an informer's life. */
export interface InformerStats {
  /** Watches opened. */
  connects: number;
  /** Initial lists reconciled with a store that had been synced before. */
  relists: number;
  /** Watches resumed from a token (no relist). */
  resumes: number;
  /** Attempts that ended in an error. */
  failures: number;
}

/**
 * Errors that retrying cannot fix: a malformed mask or selector stays
 * malformed. Every other ending (daemon gone, shutting down, still syncing,
 * RESOURCE_EXHAUSTED for a slow or surplus watcher) is a reason to back off
 * and try again.
 */
const FATAL_CODES: ReadonlySet<number> = new Set([
  STATUS.INVALID_ARGUMENT,
  STATUS.UNIMPLEMENTED,
  STATUS.PERMISSION_DENIED,
  STATUS.UNAUTHENTICATED,
]);

/** How an attempt ended without an error worth a wait. */
type Ending = "retry-now" | "ended";

/**
 * Keeps a local copy of the node's pods and tells handlers of every change.
 *
 * @example Usage
 * ```ts
 * import { PodInformer, PodsClient } from "./mod.ts";
 * using client = new PodsClient({ socket: "/run/pods-api/pods-api.sock" });
 * const informer = new PodInformer(client, { selector: { namespace: "payments" } });
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
  readonly #query: PodQueryClient;
  readonly #fields: readonly string[] | undefined;
  readonly #selection: PodSelection;
  readonly #selector: PodSelector;
  readonly #bookmarkSeconds: number;
  readonly #backoff: Backoff;
  readonly #onRetry: ((retry: InformerRetry) => void) | undefined;
  readonly #onSync: ((relist: boolean) => void) | undefined;
  readonly #onResume: (() => void) | undefined;
  readonly #sleep: Sleep;
  readonly #store = new Map<PodUid, PodObject>();
  readonly #handlers: PodEventHandler[] = [];
  readonly #syncWaiters: Array<() => void> = [];
  #synced = false;
  #api: InformerApi | undefined;
  readonly #fallback: boolean;
  #token = "";
  #eventToken = "";
  /** Statistics since construction. */
  readonly stats: InformerStats = { connects: 0, relists: 0, resumes: 0, failures: 0 };

  /**
   * Creates an informer; nothing happens until {@linkcode PodInformer.run}.
   *
   * @param client The connection to use.
   * @param options Field mask, selector, service, backoff and observers.
   * @throws {SelectorError} For a selector that cannot be parsed.
   */
  constructor(client: PodsClient, options: PodInformerOptions = {}) {
    this.#client = client;
    this.#fields = options.fields;
    this.#query = new PodQueryClient(client, options.fields ? { fields: options.fields } : {});
    this.#selection = options.selector ?? {};
    this.#selector = compileSelector(this.#selection);
    this.#bookmarkSeconds = options.bookmarkSeconds ?? 30;
    this.#api = options.api === undefined || options.api === "auto" ? undefined : options.api;
    this.#fallback = this.#api === undefined;
    this.#backoff = new Backoff(options.backoff ?? {});
    this.#onRetry = options.onRetry;
    this.#onSync = options.onSync;
    this.#onResume = options.onResume;
    this.#sleep = options.sleep ?? abortableSleep;
  }

  /** The service in use: known after the first connection. */
  get api(): InformerApi | undefined {
    return this.#api;
  }

  /** The last resume token (PodQuery), empty before the first sync. */
  get resumeToken(): string {
    return this.#token;
  }

  /**
   * While a handler runs: the resume token that follows the change it is
   * told of (a watch resumed from it misses nothing up to that change; for
   * the pods of a complete list, the list's). Empty on a kubelet's socket.
   */
  get eventToken(): string {
    return this.#eventToken;
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

  /**
   * Whether the informer has synced, as client-go's `HasSynced`.
   *
   * @returns Whether the store has held a complete list at least once.
   */
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

  /**
   * The store's pods.
   *
   * @returns The pods in the store, sorted by namespace and name.
   */
  list(): PodObject[] {
    return [...this.#store.values()].sort((a, b) =>
      a.metadata.namespace.localeCompare(b.metadata.namespace) ||
      a.metadata.name.localeCompare(b.metadata.name)
    );
  }

  /**
   * One pod of the store.
   *
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
   * @throws {GrpcError} For an error retrying cannot fix (INVALID_ARGUMENT for a bad mask or selector).
   */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      let error: unknown;
      try {
        const ending = await this.#attempt(signal);
        if (ending === "retry-now") continue;
        // The daemon ended the stream cleanly (it should not): come back soon, not at once.
        error = new GrpcError(STATUS.UNAVAILABLE, "the watch ended");
      } catch (err) {
        if (signal.aborted) return;
        if (err instanceof GrpcError && FATAL_CODES.has(err.code)) throw err;
        error = err;
      }
      if (signal.aborted) return;
      this.stats.failures++;
      const delayMs = this.#backoff.next();
      this.#onRetry?.({ error, delayMs, attempt: this.#backoff.attempts });
      await this.#sleep(delayMs, signal);
    }
  }

  async #attempt(signal: AbortSignal): Promise<Ending> {
    this.stats.connects++;
    if (this.#api === "v1alpha1.Pods") return await this.#watchPods(signal);
    try {
      return await this.#watchQuery(signal);
    } catch (err) {
      if (!(err instanceof GrpcError) || signal.aborted) throw err;
      if (err.code === STATUS.UNIMPLEMENTED && this.#fallback) {
        // A daemon without PodQuery (a kubelet): the kubelet's service, relisting on reconnect.
        this.#api = "v1alpha1.Pods";
        this.#token = "";
        return "retry-now";
      }
      if (err.code === STATUS.OUT_OF_RANGE) {
        // Token too old, or from an earlier run of the daemon: list again.
        this.#token = "";
        return "retry-now";
      }
      throw err;
    }
  }

  async #watchQuery(signal: AbortSignal): Promise<Ending> {
    const resuming = this.#token !== "";
    let initial: Map<PodUid, PodObject> | undefined = resuming ? undefined : new Map();
    let first = true;
    const events = this.#query.watch({
      signal,
      selector: this.#selection,
      resumeToken: this.#token,
      bookmarkSeconds: this.#bookmarkSeconds,
    });
    for await (const event of events) {
      this.#api = "PodQuery";
      if (first && resuming) {
        this.stats.resumes++;
        this.#backoff.reset();
        this.#onResume?.();
      }
      first = false;
      if (initial !== undefined) {
        if (event.type === "INITIAL_SYNC_COMPLETE") {
          this.#token = event.resumeToken;
          this.#eventToken = event.resumeToken;
          if (this.#synced) this.stats.relists++;
          this.#completeList(initial);
          initial = undefined;
        } else if (event.pod !== undefined) {
          if (event.type === "DELETED") initial.delete(event.pod.metadata.uid);
          else initial.set(event.pod.metadata.uid, event.pod);
        }
        continue;
      }
      if (event.pod !== undefined) {
        this.#eventToken = event.resumeToken;
        if (event.type === "DELETED") this.#delete(event.pod, false);
        else this.#upsert(event.pod);
      }
      // Taken only after the handlers ran: a resume never skips an event they missed.
      if (event.resumeToken !== "") this.#token = event.resumeToken;
    }
    return "ended";
  }

  async #watchPods(signal: AbortSignal): Promise<Ending> {
    this.#eventToken = "";
    const options = this.#fields === undefined ? { signal } : { signal, fields: this.#fields };
    let initial: Map<PodUid, PodObject> | undefined = new Map();
    for await (const event of this.#client.watchPods(options)) {
      this.#api = "v1alpha1.Pods";
      if (initial !== undefined) {
        if (event.type === "INITIAL_SYNC_COMPLETE") {
          if (this.#synced) this.stats.relists++;
          this.#completeList(initial);
          initial = undefined;
        } else if (event.pod !== undefined && this.#selector.matches(event.pod)) {
          if (event.type === "DELETED") initial.delete(event.pod.metadata.uid);
          else initial.set(event.pod.metadata.uid, event.pod);
        }
        continue;
      }
      if (event.pod === undefined) continue;
      if (event.type === "DELETED") this.#delete(event.pod, false);
      else if (this.#selector.matches(event.pod)) this.#upsert(event.pod);
      else this.#delete(this.#store.get(event.pod.metadata.uid) ?? event.pod, false);
    }
    return "ended";
  }

  #completeList(fresh: ReadonlyMap<PodUid, PodObject>): void {
    const relist = this.#synced;
    this.#replace(fresh);
    this.#backoff.reset();
    if (!this.#synced) {
      this.#synced = true;
      for (const wake of this.#syncWaiters.splice(0)) wake();
    }
    this.#onSync?.(relist);
  }

  /** Reconciles the store with a complete list. */
  #replace(fresh: ReadonlyMap<PodUid, PodObject>): void {
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
