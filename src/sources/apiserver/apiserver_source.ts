/**
 * The API server as a node-scoped pod source (DESIGN.md §17): one list, then one
 * watch of `/api/v1/pods?fieldSelector=spec.nodeName=<node>`, held open for
 * the whole daemon, instead of one per node agent.
 *
 * The reflector loop, as client-go's: list (first from the watch cache,
 * `resourceVersion=0`), then watch from the list's `resourceVersion` with
 * `allowWatchBookmarks=true` and a server-side `timeoutSeconds` drawn
 * between the minimum and twice it. A watch that ends (the server's timeout,
 * a broken connection) is opened again from the last `resourceVersion` seen
 * (events and bookmarks move it), without a list; only `410 Gone` lists
 * again, and that list keeps the snapshot object of every pod that did not
 * change, so the cache emits nothing for them. Failed requests back off with
 * jitter (or as long as `Retry-After` says).
 *
 * Every change the watch brings hands the view to the sink (the same array
 * while nothing changed). When the API server cannot be reached, the sink is
 * told each failure: the daemon keeps the last pods and counts, and
 * `/readyz` reports the source once its failure is older than
 * `--relist-threshold`.
 *
 * @module
 */

import { Backoff, type BackoffOptions } from "../../backoff.ts";
import type { Clock } from "../../clock.ts";
import type { Logger } from "../../log.ts";
import type { Metrics } from "../../metrics/metrics.ts";
import { isJsonObject, type JsonObject } from "../../model/json.ts";
import { CONFIG_ANNOTATION } from "../../model/kubelet_keys.ts";
import type { PodObject, PodSnapshot, PodUid } from "../../model/pod.ts";
import { abortableSleep, type Sleep } from "../../sleep.ts";
import type { ViewSink, WatchedSource } from "../mod.ts";
import { checkPodItem, jsonEqual } from "../pod_items.ts";
import { ApiServerClient, type ApiServerClientOptions, ApiServerError } from "./client.ts";
import type { ApiServerConnection } from "./connection.ts";
import { watchLineBatches } from "./_watch_lines.ts";

/** Shortest server-side watch timeout, s (client-go's reflector: 5 to 10 minutes). */
export const DEFAULT_MIN_WATCH_TIMEOUT_S = 300;
/** How long after its `timeoutSeconds` a silent watch is given up, ms. */
export const DEFAULT_WATCH_GRACE_MS = 30_000;
/** Longest time one list page may take, ms. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;
/** Pods per list page. */
export const DEFAULT_PAGE_SIZE = 500;
/** Longest watch line (one pod) accepted, characters. */
const MAX_WATCH_LINE = 16 * 1024 * 1024;

/** The metrics the source counts into. */
export type ApiServerSourceMetrics = Pick<
  Metrics,
  | "sourceItemsRejected"
  | "apiserverWatchRestarts"
  | "apiserverRelists"
  | "apiserverWatchEvents"
  | "apiserverLastEvent"
  | "apiserverErrors"
>;

/** Options of {@linkcode ApiServerPodSource}. */
export interface ApiServerPodSourceOptions {
  /** Server and credentials (a kubeconfig, or in-cluster). */
  connection: ApiServerConnection;
  /** The node whose pods are watched (`spec.nodeName`). */
  nodeName: string;
  clock: Clock;
  log: Logger;
  metrics?: ApiServerSourceMetrics;
  /** @default {DEFAULT_MIN_WATCH_TIMEOUT_S} */
  minWatchTimeoutSeconds?: number;
  /** @default {DEFAULT_WATCH_GRACE_MS} */
  watchGraceMs?: number;
  /** @default {DEFAULT_REQUEST_TIMEOUT_MS} */
  requestTimeoutMs?: number;
  /** @default {DEFAULT_PAGE_SIZE} */
  pageSize?: number;
  /** Retry delays. @default {800 ms doubling to 30 s, half of each random} */
  backoff?: BackoffOptions;
  /** A number in [0, 1) for the watch timeout draw. @default {Math.random} */
  random?: () => number;
  /** Waits (retries, the silent-watch deadline); tests inject one. @default {a timer} */
  sleep?: Sleep;
  /** File reader and limits of the HTTP client. */
  client?: ApiServerClientOptions;
}

/** How one watch ended without an error. */
type WatchEnd = "timeout" | "stalled" | "broken";

class StalledWatch extends Error {}

/** A watch event's `object`, when the line is well formed. */
interface WatchEvent {
  readonly type: string;
  readonly object: JsonObject;
}

function resourceVersionOf(object: JsonObject): string {
  const rv = isJsonObject(object.metadata) ? object.metadata.resourceVersion : undefined;
  return typeof rv === "string" ? rv : "";
}

/** Equal but for `metadata.resourceVersion` (a restarted server renumbers unchanged pods). */
function samePod(a: Readonly<PodObject>, b: Readonly<PodObject>): boolean {
  const { resourceVersion: _a, ...ma } = a.metadata;
  const { resourceVersion: _b, ...mb } = b.metadata;
  return jsonEqual({ ...a, metadata: ma }, { ...b, metadata: mb });
}

/**
 * The node's pods from the API server: one list, then one long-lived watch.
 *
 * Pods are served as the API server has them, except: `managedFields` are
 * dropped (server-side apply bookkeeping, often the largest part of a pod),
 * and a mirror pod (`kubernetes.io/config.mirror`) is keyed by that
 * annotation, the static pod's UID the kubelet and the runtime use, so it
 * merges with the runtime's pod instead of appearing twice.
 *
 * @example Usage
 * ```ts ignore
 * import { ApiServerPodSource, inClusterConnection } from "./mod.ts";
 * const source = new ApiServerPodSource({
 *   connection: inClusterConnection(),
 *   nodeName: "node-1",
 *   clock: { now: () => Date.now() },
 *   log: silentLogger,
 * });
 * void source.run({ view: (pods) => console.log(pods.length), failed: console.warn }, signal);
 * source.close();
 * ```
 */
export class ApiServerPodSource implements WatchedSource {
  /** Always `"apiserver"`. */
  readonly kind = "apiserver" as const;
  readonly #client: ApiServerClient;
  readonly #nodeName: string;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #metrics: ApiServerSourceMetrics | undefined;
  readonly #minWatchTimeout: number;
  readonly #watchGraceMs: number;
  readonly #requestTimeoutMs: number;
  readonly #pageSize: number;
  readonly #backoff: Backoff;
  readonly #random: () => number;
  readonly #sleep: Sleep;
  readonly #stop = new AbortController();
  /** Where views go: set by `run`. */
  #sink: ViewSink | undefined;
  #loop: Promise<void> | undefined;
  #store = new Map<PodUid, PodSnapshot>();
  #view: readonly PodSnapshot[] | undefined = Object.freeze([]);
  #rv = "";
  /** After a 410: the version a relist must not be older than ("" for a consistent read). */
  #listHint: string | undefined;
  #synced = false;
  #lastError: ApiServerError | undefined;
  #reported = new Set<string>();

  /**
   * @param options Connection, node, clock, log, metrics and timing.
   * @throws {TypeError} When the server is not an http(s) URL or the node name is empty.
   * @throws {RangeError} When a timing option is not positive.
   */
  constructor(options: ApiServerPodSourceOptions) {
    if (options.nodeName === "") {
      throw new TypeError("Cannot watch the API server's pods without a node name");
    }
    this.#client = new ApiServerClient(options.connection, options.client);
    this.#nodeName = options.nodeName;
    this.#clock = options.clock;
    this.#log = options.log;
    this.#metrics = options.metrics;
    this.#minWatchTimeout = options.minWatchTimeoutSeconds ?? DEFAULT_MIN_WATCH_TIMEOUT_S;
    this.#watchGraceMs = options.watchGraceMs ?? DEFAULT_WATCH_GRACE_MS;
    this.#requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.#pageSize = options.pageSize ?? DEFAULT_PAGE_SIZE;
    for (
      const [name, value] of [
        ["minWatchTimeoutSeconds", this.#minWatchTimeout],
        ["watchGraceMs", this.#watchGraceMs],
        ["requestTimeoutMs", this.#requestTimeoutMs],
        ["pageSize", this.#pageSize],
      ] as const
    ) {
      if (!Number.isFinite(value) || value <= 0) {
        throw new RangeError(
          `Cannot watch the API server with ${name} "${value}": it must be positive`,
        );
      }
    }
    this.#backoff = new Backoff({ initialMs: 800, maxMs: 30_000, ...options.backoff });
    this.#random = options.random ?? Math.random;
    this.#sleep = options.sleep ?? abortableSleep;
    if (options.connection.insecureSkipTlsVerify) {
      this.#log.warn(
        "API server TLS verification can only be skipped process-wide: run with --unsafely-ignore-certificate-errors",
        { server: this.#client.server },
      );
    }
  }

  /** The API server's base URL. */
  get server(): string {
    return this.#client.server;
  }

  /** The `resourceVersion` the next watch resumes from (`""` before the first list). */
  get resourceVersion(): string {
    return this.#rv;
  }

  /**
   * Starts the list and watch (they run until {@linkcode stop}) and hands
   * `sink` the view now (when there is one) and after every burst of watch
   * events that changed a pod,
   * and each failure while the API server cannot be read (the watch keeps
   * retrying).
   *
   * @param sink Where the views go.
   * @param signal Stops handing views to `sink`.
   * @returns Resolves once the signal aborts.
   */
  async run(sink: ViewSink, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    this.#sink = sink;
    // A sink that comes after the first outcome is told where things stand.
    this.#notify();
    this.#start();
    await new Promise<void>((resolve) =>
      signal.addEventListener("abort", () => resolve(), { once: true })
    );
    if (this.#sink === sink) this.#sink = undefined;
  }

  /** Stops the watch and releases the HTTP client. */
  close(): void {
    void this.stop();
  }

  /**
   * Stops the watch and waits for its loop to end.
   *
   * @returns Resolves once nothing is in flight.
   */
  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#loop;
    this.#client.close();
  }

  #start(): void {
    if (this.#loop !== undefined || this.#stop.signal.aborted) return;
    this.#loop = this.#run(this.#stop.signal).catch((error) =>
      this.#log.error("API server watch loop died", { error })
    );
  }

  /** Hands the sink the view, or the failure that keeps it from being current. */
  #notify(): void {
    const sink = this.#sink;
    if (sink === undefined) return;
    if (this.#lastError !== undefined) return sink.failed(this.#lastError);
    if (this.#synced) sink.view(this.#view ??= Object.freeze([...this.#store.values()]));
  }

  #healthy(): void {
    if (this.#lastError === undefined) return;
    this.#log.info("API server source recovered", { server: this.server });
    this.#lastError = undefined;
    this.#notify();
  }

  async #run(signal: AbortSignal): Promise<void> {
    let relistReason: "initial" | "gone" = "initial";
    while (!signal.aborted) {
      try {
        if (this.#rv === "") {
          await this.#relist(signal, relistReason);
        }
        const { end, lines } = await this.#watch(signal);
        if (signal.aborted) break;
        this.#metrics?.apiserverWatchRestarts.inc({ reason: end });
        this.#log.debug("API server watch ended, resuming", { end, lines, rv: this.#rv });
        if (lines > 0) {
          this.#backoff.reset();
          continue;
        }
        // An empty watch: do not spin on a server that closes at once.
        await this.#sleep(this.#backoff.next(), signal);
      } catch (error) {
        if (signal.aborted) break;
        if (error instanceof ApiServerError && error.failure === "http_410") {
          // A relist follows; one that is itself refused as too old reads at the newest.
          this.#listHint = this.#rv === "" ? "" : this.#rv;
          this.#rv = "";
          relistReason = "gone";
          this.#metrics?.apiserverWatchRestarts.inc({ reason: "gone" });
          this.#log.info("API server says the watch is too old (410): listing again", {
            server: this.server,
          });
          continue;
        }
        const failure = error instanceof ApiServerError ? error : new ApiServerError(
          `Cannot watch pods at ${this.server}: ${error instanceof Error ? error.message : error}`,
          { failure: "connect", cause: error },
        );
        this.#failed(failure);
        if (this.#rv !== "") this.#metrics?.apiserverWatchRestarts.inc({ reason: "error" });
        await this.#sleep(failure.retryAfterMs ?? this.#backoff.next(), signal);
      }
    }
  }

  #failed(error: ApiServerError): void {
    const previous = this.#lastError;
    this.#lastError = error;
    this.#metrics?.apiserverErrors.inc({ cause: error.failure });
    const level = previous === undefined || previous.failure !== error.failure ? "warn" : "debug";
    this.#log[level]("API server source failed, serving the last known pods", {
      server: this.server,
      cause: error.failure,
      error: error.message,
      ...(error.retryAfterMs === undefined ? {} : { retryAfterMs: error.retryAfterMs }),
    });
    this.#notify();
  }

  #selector(): string {
    return `spec.nodeName=${this.#nodeName}`;
  }

  async #relist(signal: AbortSignal, reason: "initial" | "gone"): Promise<void> {
    this.#metrics?.apiserverRelists.inc({ reason });
    const hint = this.#listHint;
    const store = new Map<PodUid, PodSnapshot>();
    const problems: { key: string; reason: string; detail: string }[] = [];
    let next = "";
    let rv = "";
    do {
      const params = new URLSearchParams({
        fieldSelector: this.#selector(),
        limit: String(this.#pageSize),
      });
      if (next !== "") params.set("continue", next);
      else if (hint === undefined) params.set("resourceVersion", "0");
      else if (hint !== "") {
        params.set("resourceVersion", hint);
        params.set("resourceVersionMatch", "NotOlderThan");
      }
      let doc: unknown;
      const timeout = AbortSignal.timeout(this.#requestTimeoutMs);
      try {
        doc = await this.#client.getJson(
          `/api/v1/pods?${params}`,
          "list",
          AbortSignal.any([signal, timeout]),
        );
      } catch (error) {
        if (timeout.aborted && !signal.aborted) {
          throw new ApiServerError(
            `Cannot list pods at ${this.server}: no answer within ${this.#requestTimeoutMs} ms`,
            { failure: "timeout" },
          );
        }
        if (error instanceof ApiServerError && error.failure === "http_410") {
          // The continue token or the hint expired: read the newest state instead.
          this.#listHint = "";
        }
        throw error;
      }
      if (!isJsonObject(doc) || !Array.isArray(doc.items) || !isJsonObject(doc.metadata)) {
        throw new ApiServerError(
          `Cannot list pods at ${this.server}: the answer is not a PodList`,
          {
            failure: "invalid_json",
          },
        );
      }
      doc.items.forEach((item, index) => {
        const snapshot = this.#snapshot(item, index, problems);
        if (snapshot !== undefined) store.set(snapshot.uid, snapshot);
      });
      rv = resourceVersionOf(doc);
      next = typeof doc.metadata.continue === "string" ? doc.metadata.continue : "";
    } while (next !== "");
    this.#report(problems);
    if (rv === "") {
      throw new ApiServerError(
        `Cannot list pods at ${this.server}: the list has no resourceVersion`,
        {
          failure: "invalid_json",
        },
      );
    }
    const changed = store.size !== this.#store.size ||
      [...store].some(([uid, snapshot]) => this.#store.get(uid) !== snapshot);
    this.#store = store;
    if (changed) this.#view = undefined;
    this.#rv = rv;
    this.#listHint = undefined;
    this.#metrics?.apiserverLastEvent.set(this.#clock.now() / 1000);
    const first = !this.#synced;
    this.#synced = true;
    if (first) {
      this.#log.info("API server source synced", { server: this.server, pods: store.size, rv });
    }
    if (this.#lastError !== undefined) this.#healthy();
    else if (changed || first) this.#notify();
  }

  async #watch(signal: AbortSignal): Promise<{ end: WatchEnd; lines: number }> {
    const timeoutSeconds = Math.floor(this.#minWatchTimeout * (1 + this.#random()));
    const params = new URLSearchParams({
      fieldSelector: this.#selector(),
      watch: "true",
      allowWatchBookmarks: "true",
      resourceVersion: this.#rv,
      timeoutSeconds: String(timeoutSeconds),
    });
    const deadline = new AbortController();
    const stalled = new StalledWatch();
    const done = new AbortController();
    this.#sleep(timeoutSeconds * 1000 + this.#watchGraceMs, done.signal).then(() => {
      if (!done.signal.aborted) deadline.abort(stalled);
    });
    const call = AbortSignal.any([signal, deadline.signal]);
    let lines = 0;
    try {
      let response: Response;
      try {
        response = await this.#client.get(`/api/v1/pods?${params}`, "watch", call);
      } catch (error) {
        if (error === stalled) return { end: "stalled", lines };
        throw error;
      }
      this.#healthy();
      try {
        for await (const batch of watchLineBatches(response.body!, MAX_WATCH_LINE)) {
          lines += batch.length;
          if (this.#apply(batch)) this.#notify();
        }
      } catch (error) {
        if (signal.aborted) throw error;
        if (deadline.signal.aborted) return { end: "stalled", lines };
        if (error instanceof ApiServerError) throw error;
        if (error instanceof Error && error.name === "WatchFramingError") {
          throw new ApiServerError(`Cannot watch pods at ${this.server}: ${error.message}`, {
            failure: "invalid_json",
          });
        }
        this.#log.debug("API server watch broke off", { error });
        return { end: "broken", lines };
      }
      return { end: "timeout", lines };
    } finally {
      done.abort();
    }
  }

  /**
   * Applies one batch of watch events to the store.
   *
   * @returns Whether a pod changed.
   * @throws {ApiServerError} For an `ERROR` event (410 among them).
   */
  #apply(batch: readonly unknown[]): boolean {
    let changed = false;
    const problems: { key: string; reason: string; detail: string }[] = [];
    for (const line of batch) {
      const event = this.#event(line);
      this.#metrics?.apiserverWatchEvents.inc({ type: event.type });
      this.#metrics?.apiserverLastEvent.set(this.#clock.now() / 1000);
      if (event.type === "ERROR") {
        const code = typeof event.object.code === "number" ? event.object.code : 0;
        const message = typeof event.object.message === "string" ? event.object.message : "";
        throw new ApiServerError(
          `Cannot watch pods at ${this.server}: the watch ended with HTTP ${code} (${message})`,
          {
            failure: code === 410
              ? "http_410"
              : code === 429
              ? "http_429"
              : code >= 500
              ? "http_5xx"
              : code === 403
              ? "http_403"
              : "http_4xx",
            status: code,
          },
        );
      }
      const rv = resourceVersionOf(event.object);
      if (event.type === "ADDED" || event.type === "MODIFIED") {
        const snapshot = this.#snapshot(event.object, 0, problems);
        if (snapshot !== undefined && this.#store.get(snapshot.uid) !== snapshot) {
          this.#store.set(snapshot.uid, snapshot);
          changed = true;
        }
      } else if (event.type === "DELETED") {
        const snapshot = this.#snapshot(event.object, 0, problems);
        if (snapshot !== undefined && this.#store.delete(snapshot.uid)) changed = true;
      }
      if (rv !== "") this.#rv = rv;
    }
    if (problems.length > 0) this.#report(problems, false);
    if (changed) this.#view = undefined;
    return changed;
  }

  #event(line: unknown): WatchEvent {
    if (isJsonObject(line) && typeof line.type === "string" && isJsonObject(line.object)) {
      return { type: line.type, object: line.object };
    }
    throw new ApiServerError(`Cannot watch pods at ${this.server}: a watch event is malformed`, {
      failure: "invalid_json",
    });
  }

  /** The snapshot of a pod item: the stored one when nothing but its resourceVersion changed. */
  #snapshot(
    item: unknown,
    index: number,
    problems: { key: string; reason: string; detail: string }[],
  ): PodSnapshot | undefined {
    const checked = checkPodItem(item, index);
    if (!checked.ok) {
      problems.push(checked);
      return undefined;
    }
    let { uid, pod } = checked;
    const spec = pod.spec;
    if (isJsonObject(spec) && spec.nodeName !== this.#nodeName) return undefined;
    const annotations = pod.metadata.annotations;
    const mirror = isJsonObject(annotations) ? annotations[CONFIG_ANNOTATION.mirror] : undefined;
    const keyed = typeof mirror === "string" && mirror !== "" && mirror !== uid;
    if (keyed || pod.metadata.managedFields !== undefined) {
      const { managedFields: _managed, ...metadata } = pod.metadata;
      if (keyed) {
        uid = mirror;
        metadata.uid = mirror;
      }
      pod = { ...pod, metadata };
    }
    const previous = this.#store.get(uid);
    return previous !== undefined && samePod(previous.pod, pod) ? previous : { uid, pod };
  }

  /** Counts and logs each bad item once (a full list replaces the set of known problems). */
  #report(problems: readonly { key: string; reason: string; detail: string }[], full = true): void {
    const known = this.#reported;
    const now = full ? new Set<string>() : known;
    for (const { key, reason, detail } of problems) {
      const seen = known.has(key);
      now.add(key);
      if (seen) continue;
      this.#metrics?.sourceItemsRejected.inc({ source: "apiserver", reason });
      this.#log.warn("skipping API server pod", { reason, detail });
    }
    this.#reported = now;
  }
}
