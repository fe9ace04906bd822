/**
 * A client of the daemon's socket (or a kubelet's): every RPC of
 * `v1alpha1.Pods` and of the package-less `Pods`, on our own gRPC transport,
 * with pods decoded to their `v1.Pod` JSON shape, field masks, rate-limit
 * retries and connection errors that say what to do.
 *
 * @module
 */

import { type CallOptions, GrpcChannel } from "../grpc/client.ts";
import { GrpcError, STATUS } from "../grpc/status.ts";
import { abortableSleep, type Sleep } from "../sleep.ts";
import type { PodObject } from "../model/pod.ts";
import {
  decodeGetPodResponse,
  decodeListPodsResponse,
  decodePod,
  decodePodWatchResponse,
  decodeWatchPodsEvent,
  encodeGetPodRequest,
  WATCH_EVENT_TYPE,
} from "../proto/mod.ts";
import { Backoff, type BackoffOptions } from "./backoff.ts";
import { diagnoseSocket } from "./connect_error.ts";
import { defaultSocket } from "./default_socket.ts";

/** Options of {@linkcode PodsClient}. */
export interface PodsClientOptions {
  /** The daemon's socket. @default {defaultSocket(): the daemon's own path, else the kubelet's} */
  socket?: string;
  /** Field mask paths for every call (sent as `x-kubernetes-fieldmask`); empty: whole pods. */
  fields?: readonly string[];
  /** Deadline of List and Get, ms. @default {10000} */
  timeoutMs?: number;
  /**
   * Retries of a List or Get the daemon's rate limit refused
   * (RESOURCE_EXHAUSTED), with jittered backoff. @default {5}
   */
  rateLimitRetries?: number;
  /** Delays between those retries. @default {{ initialMs: 100, maxMs: 2000 }} */
  rateLimitBackoff?: BackoffOptions;
  /** Sent as `user-agent`. @default {"pods-api-client"} */
  userAgent?: string;
  /** Waits between retries; injected by tests. @default {abortableSleep} */
  sleep?: Sleep;
}

/** Options of one call. */
export interface PodsCallOptions {
  /** Cancels the call. */
  signal?: AbortSignal;
  /** Field mask paths for this call, instead of the client's. */
  fields?: readonly string[];
}

/** Which Pods service to call: the kubelet's `v1alpha1.Pods` or the package-less `Pods`. */
export type PodsServiceName = "v1alpha1.Pods" | "Pods";

/** A watch event's type (`v1alpha1.EventType`). */
export type PodEventType = "ADDED" | "MODIFIED" | "DELETED" | "INITIAL_SYNC_COMPLETE";

/** One event of `v1alpha1.Pods/WatchPods`. */
export interface PodWatchEvent {
  /** ADDED, MODIFIED, DELETED or INITIAL_SYNC_COMPLETE. */
  readonly type: PodEventType;
  /** The pod; absent for INITIAL_SYNC_COMPLETE. */
  readonly pod?: PodObject;
}

/** A List or Get the daemon kept refusing with RESOURCE_EXHAUSTED (rate limit). */
export class RateLimitedError extends GrpcError {
  /** Calls made, the first included. */
  readonly attempts: number;

  /**
   * Builds the error.
   *
   * @param message The daemon's last message.
   * @param attempts Calls made.
   */
  constructor(message: string, attempts: number) {
    super(STATUS.RESOURCE_EXHAUSTED, message);
    this.name = "RateLimitedError";
    this.attempts = attempts;
  }
}

const EVENT_NAMES: ReadonlyMap<number, PodEventType> = new Map([
  [WATCH_EVENT_TYPE.ADDED, "ADDED"],
  [WATCH_EVENT_TYPE.MODIFIED, "MODIFIED"],
  [WATCH_EVENT_TYPE.DELETED, "DELETED"],
  [WATCH_EVENT_TYPE.INITIAL_SYNC_COMPLETE, "INITIAL_SYNC_COMPLETE"],
]);

/**
 * A client of the Pods API on a UNIX socket. It connects on the first call,
 * reconnects on the next call after the daemon goes away, and is closed with
 * `using` or {@linkcode PodsClient.close}.
 *
 * @example List the node's pods
 * ```ts
 * import { PodsClient } from "./pods_client.ts";
 * using client = new PodsClient({ socket: "/run/pods-api/pods-api.sock" });
 * for (const pod of await client.listPods()) console.log(pod.metadata.name);
 * ```
 *
 * @example Watch with a field mask
 * ```ts
 * import { PodsClient } from "./pods_client.ts";
 * using client = new PodsClient({ fields: ["status.phase"] });
 * const stop = new AbortController();
 * for await (const event of client.watchPods({ signal: stop.signal })) {
 *   console.log(event.type, event.pod?.metadata.name, event.pod?.status?.phase);
 * }
 * ```
 */
export class PodsClient implements Disposable {
  /** The socket this client connects to. */
  readonly socket: string;
  readonly #channel: GrpcChannel;
  readonly #fields: readonly string[];
  readonly #timeoutMs: number;
  readonly #retries: number;
  readonly #backoff: BackoffOptions;
  readonly #sleep: Sleep;

  /**
   * Creates a client; nothing is opened until the first call.
   *
   * @param options Socket, field mask, deadline and retries.
   */
  constructor(options: PodsClientOptions = {}) {
    this.socket = options.socket ?? defaultSocket();
    this.#channel = new GrpcChannel({ transport: "unix", path: this.socket }, {
      maxReceiveMessageBytes: 256 * 1024 * 1024,
      userAgent: options.userAgent ?? "pods-api-client",
    });
    this.#fields = options.fields ?? [];
    this.#timeoutMs = options.timeoutMs ?? 10_000;
    this.#retries = options.rateLimitRetries ?? 5;
    this.#backoff = options.rateLimitBackoff ?? { initialMs: 100, maxMs: 2000 };
    this.#sleep = options.sleep ?? abortableSleep;
  }

  /** The field mask paths every call sends unless told otherwise. */
  get fields(): readonly string[] {
    return this.#fields;
  }

  /**
   * Every pod on the node (`ListPods`).
   *
   * @param options Cancellation, field mask and service.
   * @returns The pods, in the daemon's order.
   * @throws {PodsApiConnectError} When the socket cannot be reached.
   * @throws {RateLimitedError} When the rate limit refused every retry.
   * @throws {GrpcError} With the daemon's status otherwise (FAILED_PRECONDITION: still syncing).
   */
  async listPods(
    options: PodsCallOptions & { service?: PodsServiceName } = {},
  ): Promise<PodObject[]> {
    const bytes = await this.unary(
      `/${options.service ?? "v1alpha1.Pods"}/ListPods`,
      new Uint8Array(),
      options,
    );
    return decodeListPodsResponse(bytes).map(decodePod);
  }

  /**
   * One pod by UID (`GetPod`).
   *
   * @param uid The pod's `metadata.uid`.
   * @param options Cancellation, field mask and service.
   * @returns The pod.
   * @throws {GrpcError} NOT_FOUND for an unknown UID, and as {@linkcode PodsClient.listPods}.
   */
  async getPod(
    uid: string,
    options: PodsCallOptions & { service?: PodsServiceName } = {},
  ): Promise<PodObject> {
    const bytes = await this.unary(
      `/${options.service ?? "v1alpha1.Pods"}/GetPod`,
      encodeGetPodRequest(uid),
      options,
    );
    return decodePod(decodeGetPodResponse(bytes));
  }

  /**
   * `v1alpha1.Pods/WatchPods`: one ADDED per pod, INITIAL_SYNC_COMPLETE, then
   * changes, until `signal` aborts (the iteration then just ends) or the
   * stream ends.
   *
   * @param options Cancellation and field mask.
   * @returns The events.
   * @throws {PodsApiConnectError} When the socket cannot be reached.
   * @throws {GrpcError} When the stream ends with an error (RESOURCE_EXHAUSTED: too slow).
   */
  async *watchPods(options: PodsCallOptions = {}): AsyncGenerator<PodWatchEvent> {
    for await (const message of this.serverStream("/v1alpha1.Pods/WatchPods", options)) {
      const event = decodeWatchPodsEvent(message);
      const type = EVENT_NAMES.get(event.type);
      if (type === undefined) {
        throw new GrpcError(STATUS.INTERNAL, `Unknown watch event type ${event.type}`);
      }
      yield event.pod !== undefined && event.pod.byteLength > 0
        ? { type, pod: decodePod(event.pod) }
        : { type };
    }
  }

  /**
   * The package-less `Pods/WatchPods`: each pod, then each changed pod; a
   * deleted pod comes once more with `metadata.deletionTimestamp` set.
   *
   * @param options Cancellation and field mask.
   * @returns The pods as they arrive.
   * @throws {GrpcError} As {@linkcode PodsClient.watchPods}.
   */
  async *watchPodsV1(options: PodsCallOptions = {}): AsyncGenerator<PodObject> {
    for await (const message of this.serverStream("/Pods/WatchPods", options)) {
      yield decodePod(decodePodWatchResponse(message));
    }
  }

  /**
   * A unary call of any method on the socket, with the client's mask,
   * deadline, rate-limit retries and connection diagnosis.
   *
   * @param path `/package.Service/Method`.
   * @param request The serialized request.
   * @param options Cancellation and field mask.
   * @returns The serialized response.
   * @throws {PodsApiConnectError} When the socket cannot be reached.
   * @throws {RateLimitedError} When the rate limit refused every retry.
   * @throws {GrpcError} With the daemon's status otherwise.
   */
  async unary(
    path: string,
    request: Uint8Array,
    options: PodsCallOptions = {},
  ): Promise<Uint8Array> {
    const backoff = new Backoff(this.#backoff);
    for (let attempt = 1;; attempt++) {
      try {
        return await this.#channel.unary(path, request, {
          ...this.#callOptions(options),
          timeoutMs: this.#timeoutMs,
        });
      } catch (err) {
        const signal = options.signal;
        if (err instanceof GrpcError && err.code === STATUS.RESOURCE_EXHAUSTED) {
          if (attempt > this.#retries) throw new RateLimitedError(err.message, attempt);
          if (signal !== undefined && signal.aborted) throw err;
          await this.#sleep(backoff.next(), signal ?? new AbortController().signal);
          continue;
        }
        throw await this.#explain(err);
      }
    }
  }

  /**
   * A server-streaming call of any method on the socket, ending quietly
   * when `options.signal` aborts.
   *
   * @param path `/package.Service/Method`.
   * @param options Cancellation and field mask.
   * @param request The serialized request. @default {empty}
   * @returns The serialized messages.
   * @throws {PodsApiConnectError} When the socket cannot be reached.
   * @throws {GrpcError} When the stream ends with an error.
   */
  async *serverStream(
    path: string,
    options: PodsCallOptions = {},
    request: Uint8Array = new Uint8Array(),
  ): AsyncGenerator<Uint8Array> {
    const call = this.#channel.serverStream(path, request, this.#callOptions(options));
    try {
      yield* call;
    } catch (err) {
      if (options.signal?.aborted) return;
      throw await this.#explain(err);
    } finally {
      call.cancel();
    }
  }

  #callOptions(options: PodsCallOptions): CallOptions {
    const fields = options.fields ?? this.#fields;
    const out: CallOptions = fields.length > 0
      ? { metadata: { "x-kubernetes-fieldmask": fields.join(",") } }
      : {};
    return options.signal === undefined ? out : { ...out, signal: options.signal };
  }

  /** Turns a failed connect into a {@linkcode PodsApiConnectError} that says why. */
  async #explain(err: unknown): Promise<unknown> {
    if (
      err instanceof GrpcError && err.code === STATUS.UNAVAILABLE &&
      err.message.startsWith("Cannot connect to")
    ) {
      return await diagnoseSocket(this.socket) ?? err;
    }
    return err;
  }

  /** Closes the connection; calls in flight fail with UNAVAILABLE. */
  close(): void {
    this.#channel.close();
  }

  /** Same as {@linkcode PodsClient.close}. */
  [Symbol.dispose](): void {
    this.close();
  }
}
