/**
 * The kubelet's own Pods API as a pod source (kind `kubelet-podsapi`,
 * DESIGN.md §16): one `v1alpha1.Pods/WatchPods` stream on the kubelet's socket
 * gives every pod's full spec and the kubelet's status. The initial ADDED
 * events up to INITIAL_SYNC_COMPLETE are the first full view; each later
 * event that changes it hands the new view to the sink at once.
 *
 * The watch ends for many reasons, and each has its answer:
 * - FAILED_PRECONDITION: the kubelet is initializing; retried with backoff,
 *   and until a first full view the source is not synced.
 * - RESOURCE_EXHAUSTED (dropped as too slow), a stream the kubelet closed, a
 *   kubelet restart: a new watch, whose initial list is diffed against what
 *   is held (an unchanged pod is the very same snapshot, so no event).
 * - While no watch gets through after the source had synced, its pods stay,
 *   handed on as a held view: the merge keeps their spec and rebuilds status
 *   from the runtime; `/readyz` says so (the view's reason).
 * - No socket at the path, refused connections, UNIMPLEMENTED, or the path
 *   being this daemon's own compatibility socket, before any full view: no
 *   kubelet Pods API on this node (older kubelet, feature gate off). The
 *   source reports no pods and keeps looking.
 *
 * @module
 */

import { Backoff } from "../../backoff.ts";
import { GrpcChannel } from "../../grpc/client.ts";
import { GrpcError, STATUS } from "../../grpc/status.ts";
import type { Logger } from "../../log.ts";
import type { Metrics } from "../../metrics/metrics.ts";
import type { PodSnapshot } from "../../model/pod.ts";
import { decodePod, decodeWatchPodsEvent, WATCH_EVENT_TYPE } from "../../proto/mod.ts";
import { abortableSleep, type Sleep } from "../../sleep.ts";
import { SourceUnavailableError, type ViewSink, type WatchedSource } from "../mod.ts";
import { parsePodsApiEndpoint, probeEndpoint, type SocketIdentity } from "./_endpoint.ts";
import { KubeletPodView, type ReceivedPod } from "./_pod_view.ts";

/** Where the kubelet serves its Pods API (KEP-4188). */
export const KUBELET_PODS_API_SOCKET = "/var/lib/kubelet/pods-api/pods-api.sock";

/** The watch method's path. */
export const WATCH_PODS_METHOD = "/v1alpha1.Pods/WatchPods";

/** First wait before retrying the kubelet, ms; doubled per failure. */
export const DEFAULT_RETRY_INITIAL_MS = 250;

/** Longest wait between retries, ms. */
export const DEFAULT_RETRY_MAX_MS = 5_000;

/** What the source knows of the kubelet's Pods API right now. */
export type KubeletPodsApiState =
  /** Not tried yet. */
  | "starting"
  /** No Pods API at the endpoint, and none ever seen. */
  | "absent"
  /** The kubelet answers FAILED_PRECONDITION and no full view was had yet. */
  | "initializing"
  /** The watch failed otherwise before a first full view. */
  | "failed"
  /** The watch is open and past its initial list, or reconnecting after a clean end. */
  | "live"
  /** Had a full view; the kubelet does not answer now: pods held. */
  | "down";

/** The metrics the source counts into. */
export type KubeletPodsApiMetrics = Pick<
  Metrics,
  | "kubeletPodsApiConnected"
  | "kubeletPodsApiReconnects"
  | "kubeletPodsApiEvents"
  | "sourceItemsRejected"
>;

/** Options of {@linkcode KubeletPodsApiSource}. */
export interface KubeletPodsApiSourceOptions {
  /** `unix:///path` or an absolute path. @default {KUBELET_PODS_API_SOCKET} */
  endpoint?: string;
  log: Logger;
  metrics?: KubeletPodsApiMetrics;
  /**
   * Whether the socket at the endpoint is this daemon's own (its
   * compatibility socket on the kubelet's path): then there is no kubelet
   * Pods API to read. @default {() => false}
   */
  isOwnSocket?: (identity: SocketIdentity) => boolean;
  /** @default {DEFAULT_RETRY_INITIAL_MS} */
  retryInitialMs?: number;
  /** @default {DEFAULT_RETRY_MAX_MS} */
  retryMaxMs?: number;
  /** Largest message accepted (one pod), bytes. @default {16777216} */
  maxMessageBytes?: number;
  /** Waits between retries; tests inject their own. @default {abortableSleep} */
  sleep?: Sleep;
}

/** How one watch attempt ended. */
type Outcome =
  | { readonly kind: "absent"; readonly why: string }
  /** Ended before its initial list was complete. */
  | { readonly kind: "failed"; readonly reason: string; readonly error: unknown }
  /** Ended after its initial list; `news`: live events arrived after it. */
  | { readonly kind: "ended"; readonly reason: string; readonly news: boolean };

const NO_PODS: readonly PodSnapshot[] = Object.freeze([]);
const EVENT_NAMES: Readonly<Record<number, string>> = {
  [WATCH_EVENT_TYPE.UNSPECIFIED]: "unspecified",
  [WATCH_EVENT_TYPE.ADDED]: "added",
  [WATCH_EVENT_TYPE.MODIFIED]: "modified",
  [WATCH_EVENT_TYPE.DELETED]: "deleted",
  [WATCH_EVENT_TYPE.INITIAL_SYNC_COMPLETE]: "initial_sync_complete",
};

function reasonOf(error: unknown): string {
  if (!(error instanceof GrpcError)) return "error";
  switch (error.code) {
    case STATUS.FAILED_PRECONDITION:
      return "failed_precondition";
    case STATUS.RESOURCE_EXHAUSTED:
      return "resource_exhausted";
    case STATUS.UNAVAILABLE:
      return "unavailable";
    case STATUS.UNIMPLEMENTED:
      return "unimplemented";
    default:
      return "error";
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The kubelet's Pods API, watched.
 *
 * @example Usage
 * ```ts ignore
 * import { KubeletPodsApiSource } from "./kubelet_podsapi_source.ts";
 * import { silentLogger } from "../../log.ts";
 * const source = new KubeletPodsApiSource({ log: silentLogger });
 * void source.run({ view: (pods) => console.log(pods.length), failed: console.warn }, signal);
 * source.close();
 * ```
 */
export class KubeletPodsApiSource implements WatchedSource {
  readonly kind = "kubelet-podsapi" as const;
  /** The socket path read. */
  readonly path: string;
  readonly #log: Logger;
  readonly #metrics: KubeletPodsApiMetrics | undefined;
  readonly #isOwnSocket: (identity: SocketIdentity) => boolean;
  /** Waits between attempts that brought nothing new: doubling, no jitter. */
  readonly #retry: Backoff;
  readonly #sleep: Sleep;
  readonly #channel: GrpcChannel;
  readonly #view = new KubeletPodView();
  /** Where views go: set by `run`. */
  #sink: ViewSink | undefined;
  readonly #stop = new AbortController();
  #loop: Promise<void> | undefined;
  #state: KubeletPodsApiState = "starting";
  /** Why the last attempt did not give a live watch, for errors and `/readyz`. */
  #why = "";
  #lastError: unknown;

  /**
   * @param options Endpoint, log, metrics, retry timing.
   * @throws {TypeError} When the endpoint is not a unix socket path.
   */
  constructor(options: KubeletPodsApiSourceOptions) {
    this.path = parsePodsApiEndpoint(options.endpoint ?? KUBELET_PODS_API_SOCKET);
    this.#log = options.log;
    this.#metrics = options.metrics;
    this.#isOwnSocket = options.isOwnSocket ?? (() => false);
    const initialMs = options.retryInitialMs ?? DEFAULT_RETRY_INITIAL_MS;
    const maxMs = Math.max(initialMs, options.retryMaxMs ?? DEFAULT_RETRY_MAX_MS);
    this.#retry = new Backoff({ initialMs, maxMs, jitter: 0 });
    this.#sleep = options.sleep ?? abortableSleep;
    this.#channel = new GrpcChannel({ transport: "unix", path: this.path }, {
      maxReceiveMessageBytes: options.maxMessageBytes ?? 16 * 1024 * 1024,
      userAgent: "pods-api-kubelet-podsapi",
    });
  }

  /** Where the source stands (for tests and logs). */
  get state(): KubeletPodsApiState {
    return this.#state;
  }

  /**
   * Starts the watch (it runs until {@linkcode close}) and hands every view
   * and failure to `sink`: the view as the kubelet listed it (none when it
   * has no Pods API), held while it does not answer after a first full view;
   * a failure while the kubelet is initializing (`initializing`) or the watch
   * fails (`watch_failed`) before one.
   *
   * @param sink Where the views go.
   * @param signal Stops handing views to `sink`.
   * @returns Resolves once the signal aborts.
   */
  run(sink: ViewSink, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.resolve();
    this.#sink = sink;
    // A sink that comes after the first outcome is told where things stand.
    if (this.#state !== "starting") this.#changed();
    this.#start();
    return new Promise((resolve) => {
      signal.addEventListener("abort", () => {
        if (this.#sink === sink) this.#sink = undefined;
        resolve();
      }, { once: true });
    });
  }

  /** Stops the watch and closes the connection. */
  close(): void {
    this.#stop.abort();
    this.#channel.close();
  }

  /** Resolves once the watch loop has ended (after {@linkcode close}). */
  async closed(): Promise<void> {
    await this.#loop;
  }

  #start(): void {
    if (this.#loop !== undefined || this.#stop.signal.aborted) return;
    this.#loop = this.#run(this.#stop.signal).catch((error) => {
      this.#log.error("kubelet Pods API watch loop died", { error });
    });
  }

  /** Hands the source's view (or why it has none) to the sink. */
  #changed(): void {
    const sink = this.#sink;
    if (sink === undefined) return;
    if (this.#view.synced) {
      if (this.#view.live) return sink.view(this.#view.snapshots());
      return sink.view(
        this.#view.snapshots(),
        `kubelet Pods API at ${this.path} is not answering (${this.#why}): serving the pod specs it last gave, with status from the container runtime`,
      );
    }
    switch (this.#state) {
      case "initializing":
        return sink.failed(
          new SourceUnavailableError(
            `Cannot list pods of the kubelet's Pods API at "${this.path}": the kubelet is initializing (${this.#why})`,
            { reason: "initializing", cause: this.#lastError },
          ),
        );
      case "failed":
        return sink.failed(
          new SourceUnavailableError(
            `Cannot list pods of the kubelet's Pods API at "${this.path}": ${this.#why}`,
            { reason: "watch_failed", cause: this.#lastError },
          ),
        );
      default:
        return sink.view(NO_PODS);
    }
  }

  #setState(state: KubeletPodsApiState): void {
    this.#state = state;
    this.#metrics?.kubeletPodsApiConnected.set(state === "live" && !this.#view.listing ? 1 : 0);
  }

  async #run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      const outcome = await this.#watchOnce(signal);
      if (signal.aborted) return;
      if (outcome.kind === "ended") {
        this.#metrics?.kubeletPodsApiReconnects.inc({ reason: outcome.reason });
        this.#log.info("kubelet Pods API watch ended; watching again", {
          endpoint: this.path,
          reason: outcome.reason,
        });
        // A watch that brought news was healthy: reconnect at once.
        if (outcome.news) {
          this.#retry.reset();
          continue;
        }
      } else {
        this.#notAnswering(outcome, this.#retry.attempts + 1);
      }
      await this.#sleep(this.#retry.next(), signal);
    }
  }

  /** An attempt that did not reach a full view. */
  #notAnswering(outcome: Exclude<Outcome, { kind: "ended" }>, failures: number): void {
    const why = outcome.kind === "absent" ? outcome.why : messageOf(outcome.error);
    const changedWhy = why !== this.#why;
    this.#why = why;
    this.#lastError = outcome.kind === "failed" ? outcome.error : undefined;
    if (this.#view.synced) {
      const first = this.#state !== "down";
      this.#setState("down");
      // Held at once, and handed on again when the cause changes: /readyz says the current one.
      if (this.#view.hold() || changedWhy) this.#changed();
      if (first) {
        this.#log.warn(
          "kubelet Pods API stopped answering; keeping its pods, with status from the runtime",
          { endpoint: this.path, why, pods: this.#view.size },
        );
      }
      return;
    }
    const state = outcome.kind === "absent" || outcome.reason === "unimplemented"
      ? "absent"
      : outcome.reason === "failed_precondition"
      ? "initializing"
      : "failed";
    const quiet = this.#state === state && !changedWhy;
    this.#setState(state);
    this.#changed();
    if (quiet) return;
    if (state === "absent") {
      this.#log.info("no kubelet Pods API on this node (yet); looking again with backoff", {
        endpoint: this.path,
        why,
      });
    } else {
      this.#log[failures === 1 ? "info" : "warn"]("kubelet Pods API not ready; retrying", {
        endpoint: this.path,
        why,
        failures,
      });
    }
  }

  async #watchOnce(signal: AbortSignal): Promise<Outcome> {
    const probe = await probeEndpoint(this.path, this.#isOwnSocket);
    if (probe.kind === "absent") return probe;
    const call = this.#channel.serverStream(WATCH_PODS_METHOD, new Uint8Array(0), { signal });
    this.#view.beginList();
    let synced = false;
    let news = false;
    try {
      for await (const message of call) {
        const type = this.#onEvent(message);
        if (type === WATCH_EVENT_TYPE.INITIAL_SYNC_COMPLETE && !synced) {
          synced = true;
          this.#commit();
        } else if (synced && type !== undefined) {
          news = true;
        }
      }
      if (synced) return { kind: "ended", reason: "closed", news };
      return {
        kind: "failed",
        reason: "error",
        error: new GrpcError(STATUS.INTERNAL, "the watch ended before INITIAL_SYNC_COMPLETE"),
      };
    } catch (error) {
      const reason = reasonOf(error);
      if (synced) return { kind: "ended", reason, news };
      if (reason === "unavailable" && !this.#view.synced) {
        // A stale socket file (nobody listening) or a server that went away.
        return { kind: "absent", why: messageOf(error) };
      }
      return { kind: "failed", reason, error };
    } finally {
      call.cancel();
      if (this.#view.listing) this.#view.abandonList();
      if (this.#state === "live") this.#metrics?.kubeletPodsApiConnected.set(0);
    }
  }

  /** The initial list is complete: it becomes the view. */
  #commit(): void {
    const wasSynced = this.#view.synced;
    const wasLive = this.#view.live;
    const changes = this.#view.completeList();
    const why = this.#why;
    this.#why = "";
    this.#lastError = undefined;
    this.#setState("live");
    const fields = { endpoint: this.path, pods: this.#view.size, ...changes };
    if (!wasSynced) this.#log.info("kubelet Pods API synced", fields);
    else if (!wasLive) this.#log.info("kubelet Pods API answers again", { ...fields, was: why });
    else this.#log.debug("kubelet Pods API watch resynced", fields);
    if (!wasLive || changes.added + changes.modified + changes.deleted > 0) this.#changed();
  }

  /**
   * Applies one event.
   *
   * @returns Its type, or `undefined` when it was skipped as malformed.
   */
  #onEvent(message: Uint8Array): number | undefined {
    let type: number;
    let podBytes: Uint8Array | undefined;
    try {
      const event = decodeWatchPodsEvent(message);
      type = event.type;
      podBytes = event.pod;
    } catch (error) {
      this.#reject("invalid_event", error);
      return undefined;
    }
    this.#metrics?.kubeletPodsApiEvents.inc({ type: EVENT_NAMES[type] ?? "unknown" });
    if (type === WATCH_EVENT_TYPE.INITIAL_SYNC_COMPLETE) return type;
    if (type === WATCH_EVENT_TYPE.UNSPECIFIED) {
      this.#reject("unspecified_event", new TypeError("event type UNSPECIFIED"));
      return undefined;
    }
    const received = this.#decode(podBytes ?? new Uint8Array(0));
    if (received === undefined) return undefined;
    const changed = type === WATCH_EVENT_TYPE.DELETED
      ? this.#view.delete(received.uid)
      : this.#view.put(received);
    if (changed) this.#changed();
    return type;
  }

  #decode(bytes: Uint8Array): ReceivedPod | undefined {
    let pod;
    try {
      pod = decodePod(bytes);
    } catch (error) {
      this.#reject("invalid_pod", error);
      return undefined;
    }
    const uid = pod.metadata?.uid;
    if (typeof uid !== "string" || uid === "") {
      this.#reject("no_uid", new TypeError("a pod without metadata.uid"));
      return undefined;
    }
    return { uid, bytes, pod };
  }

  #reject(reason: string, error: unknown): void {
    this.#metrics?.sourceItemsRejected.inc({ source: this.kind, reason });
    this.#log.warn("skipped an event of the kubelet's Pods API", { reason, error });
  }
}
