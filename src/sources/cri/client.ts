/**
 * A typed client of the CRI `runtime.v1.RuntimeService` over the runtime's
 * UNIX socket (grpc-js with protobufjs serializers), plus detection of the
 * usual containerd and CRI-O sockets.
 *
 * @module
 */

import { Client, credentials, Metadata, type ServiceError, status } from "@grpc/grpc-js";
import type { ClientReadableStream } from "@grpc/grpc-js";
import type { Clock } from "../../clock.ts";
import { systemClock } from "../../clock.ts";
import type { Logger } from "../../log.ts";
import { silentLogger } from "../../log.ts";
import { SourceUnavailableError } from "../mod.ts";
import { CRI_METHODS, type CriMethod, toBuffer } from "./_service.ts";
import {
  type ContainerEventResponse,
  type ContainerIdRequest,
  type ContainerStatusRequest,
  type ContainerStatusResponse,
  type CreateContainerRequest,
  type CreateContainerResponse,
  CRI_STATUS,
  CriCallError,
  type CriCallOptions,
  type EmptyResponse,
  type GetEventsRequest,
  type ListContainersRequest,
  type ListContainersResponse,
  type ListPodSandboxRequest,
  type ListPodSandboxResponse,
  type MessageInit,
  type PodSandboxIdRequest,
  type PodSandboxStatusRequest,
  type PodSandboxStatusResponse,
  type RunPodSandboxRequest,
  type RunPodSandboxResponse,
  type RuntimeService,
  type StatusRequest,
  type StatusResponse,
  type StopContainerRequest,
  type VersionRequest,
  type VersionResponse,
} from "./_types.ts";

/** The kubelet's default `--runtime-request-timeout`: 2 minutes. */
export const DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS = 120_000;

/** Largest message accepted from the runtime: 16 MiB, as the kubelet's CRI client. */
export const DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

/**
 * Sockets tried by {@linkcode detectRuntimeEndpoint}, in order: containerd,
 * CRI-O (both usual paths), cri-dockerd (the same list as crictl's).
 */
export const DEFAULT_RUNTIME_ENDPOINTS: readonly string[] = [
  "unix:///run/containerd/containerd.sock",
  "unix:///run/crio/crio.sock",
  "unix:///var/run/crio/crio.sock",
  "unix:///var/run/cri-dockerd.sock",
];

/** After UNAVAILABLE, the channel is replaced at most this often. */
const CHANNEL_RENEW_INTERVAL_MS = 1000;

/** Most events buffered for a slow `getContainerEvents` consumer (they are only hints). */
const MAX_BUFFERED_EVENTS = 1024;

/**
 * Channel options: reconnect within a second after the runtime restarts
 * (grpc's defaults back off up to 2 minutes), a private subchannel (so that
 * a renewed channel starts without the old one's backoff), and the kubelet's
 * message size limit.
 */
function channelOptions(maxMessageBytes: number): Record<string, number> {
  return {
    "grpc.initial_reconnect_backoff_ms": 100,
    "grpc.min_reconnect_backoff_ms": 100,
    "grpc.max_reconnect_backoff_ms": 1000,
    "grpc.use_local_subchannel_pool": 1,
    "grpc.max_receive_message_length": maxMessageBytes,
    "grpc.max_send_message_length": maxMessageBytes,
  };
}

/**
 * Parses a runtime endpoint: `unix:///path/to.sock` (the kubelet's
 * `--container-runtime-endpoint` form) or a plain absolute path.
 *
 * @example Usage
 * ```ts
 * import { parseRuntimeEndpoint } from "./client.ts";
 * parseRuntimeEndpoint("/run/containerd/containerd.sock").target;
 * // "unix:///run/containerd/containerd.sock"
 * ```
 *
 * @param endpoint The endpoint.
 * @returns The socket path and the grpc-js target.
 * @throws {TypeError} For another scheme (tcp, npipe) or a relative path.
 */
export function parseRuntimeEndpoint(endpoint: string): { path: string; target: string } {
  let path = endpoint;
  if (endpoint.startsWith("unix://")) path = endpoint.slice("unix://".length);
  else if (/^[a-z][a-z0-9+.-]*:/i.test(endpoint)) {
    throw new TypeError(
      `Cannot use runtime endpoint "${endpoint}": only unix sockets are supported`,
    );
  }
  if (!path.startsWith("/")) {
    throw new TypeError(`Cannot use runtime endpoint "${endpoint}": the path must be absolute`);
  }
  return { path, target: `unix://${path}` };
}

/** Options of {@linkcode CriClient}. */
export interface CriClientOptions {
  /**
   * Default deadline of a call in milliseconds (`--runtime-request-timeout`);
   * a call's own `timeoutMs` wins.
   * @default {120000}
   */
  requestTimeoutMs?: number;
  /** Largest message in either direction. @default {16777216} */
  maxMessageBytes?: number;
  /** Source of deadlines. @default {systemClock} */
  clock?: Clock;
  log?: Logger;
}

/**
 * CRI `runtime.v1.RuntimeService` client on a UNIX socket. Every call has a
 * deadline; a call fails with {@linkcode CriCallError} carrying the gRPC code.
 * After UNAVAILABLE (runtime down or restarting), the channel is replaced so
 * that the next call connects afresh.
 *
 * @example Usage
 * ```ts ignore
 * import { CriClient } from "./client.ts";
 * using client = new CriClient("unix:///run/containerd/containerd.sock");
 * const v = await client.version();
 * v.runtimeName; // "containerd"
 * ```
 */
export class CriClient implements RuntimeService, Disposable {
  /** The endpoint as given. */
  readonly endpoint: string;
  /** The grpc-js target, `unix:///...`. */
  readonly target: string;
  readonly #timeoutMs: number;
  readonly #maxMessageBytes: number;
  readonly #clock: Clock;
  readonly #log: Logger;
  #client: Client;
  #clientCreatedAt: number;
  #closed = false;

  /**
   * Creates the client; it connects on the first call.
   *
   * @param endpoint `unix:///path` or an absolute socket path.
   * @param options Default deadline, message size limit, clock, logger.
   * @throws {TypeError} For an endpoint that is not a unix socket path.
   */
  constructor(endpoint: string, options: CriClientOptions = {}) {
    this.endpoint = endpoint;
    this.target = parseRuntimeEndpoint(endpoint).target;
    this.#timeoutMs = options.requestTimeoutMs ?? DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS;
    this.#maxMessageBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    this.#clock = options.clock ?? systemClock;
    this.#log = options.log ?? silentLogger;
    this.#client = this.#newClient();
    this.#clientCreatedAt = this.#clock.now();
  }

  #newClient(): Client {
    return new Client(
      this.target,
      credentials.createInsecure(),
      channelOptions(this.#maxMessageBytes),
    );
  }

  /** Closes the channel; calls in flight fail. */
  close(): void {
    this.#closed = true;
    this.#client.close();
  }

  /** Same as {@linkcode CriClient.close}. */
  [Symbol.dispose](): void {
    this.close();
  }

  #renewChannel(): void {
    const now = this.#clock.now();
    if (this.#closed || now - this.#clientCreatedAt < CHANNEL_RENEW_INTERVAL_MS) return;
    this.#log.debug("runtime unavailable; renewing the channel", { endpoint: this.endpoint });
    const old = this.#client;
    this.#client = this.#newClient();
    this.#clientCreatedAt = now;
    old.close();
  }

  #error(m: CriMethod<unknown, unknown>, err: ServiceError): CriCallError {
    if (err.code === CRI_STATUS.unavailable) this.#renewChannel();
    const name = status[err.code] ?? String(err.code);
    return new CriCallError(`${name}: ${err.details || err.message}`, {
      code: err.code,
      method: m.rpc,
      cause: err,
    });
  }

  #unary<Req, Res>(
    m: CriMethod<Req, Res>,
    request: MessageInit<Req>,
    options: CriCallOptions = {},
  ): Promise<Res> {
    return new Promise<Res>((resolve, reject) => {
      const signal = options.signal;
      if (this.#closed || signal?.aborted) {
        reject(
          new CriCallError(this.#closed ? "client is closed" : "call was aborted", {
            code: CRI_STATUS.cancelled,
            method: m.rpc,
            cause: signal?.reason,
          }),
        );
        return;
      }
      const deadline = this.#clock.now() + (options.timeoutMs ?? this.#timeoutMs);
      const onAbort = () => call.cancel();
      const call = this.#client.makeUnaryRequest<MessageInit<Req>, Res>(
        m.path,
        (value) => toBuffer(m.request.encode(value)),
        (bytes) => m.response.decode(bytes),
        request,
        new Metadata(),
        { deadline },
        (err, value) => {
          signal?.removeEventListener("abort", onAbort);
          if (err) reject(this.#error(m as CriMethod<unknown, unknown>, err));
          else resolve(value as Res);
        },
      );
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /**
   * The version handshake.
   *
   * @param request The client's CRI version. @default {{ version: "v1" }}
   * @param options Signal and deadline.
   * @returns The runtime's name, version and CRI API version.
   */
  version(
    request: MessageInit<VersionRequest> = { version: "v1" },
    options?: CriCallOptions,
  ): Promise<VersionResponse> {
    return this.#unary(CRI_METHODS.version, request, options);
  }

  /** `Status`: the runtime's RuntimeReady and NetworkReady conditions. */
  status(
    request: MessageInit<StatusRequest> = {},
    options?: CriCallOptions,
  ): Promise<StatusResponse> {
    return this.#unary(CRI_METHODS.status, request, options);
  }

  /** `RunPodSandbox`. */
  runPodSandbox(
    request: MessageInit<RunPodSandboxRequest>,
    options?: CriCallOptions,
  ): Promise<RunPodSandboxResponse> {
    return this.#unary(CRI_METHODS.runPodSandbox, request, options);
  }

  /** `StopPodSandbox`. */
  stopPodSandbox(
    request: MessageInit<PodSandboxIdRequest>,
    options?: CriCallOptions,
  ): Promise<EmptyResponse> {
    return this.#unary(CRI_METHODS.stopPodSandbox, request, options);
  }

  /** `RemovePodSandbox`. */
  removePodSandbox(
    request: MessageInit<PodSandboxIdRequest>,
    options?: CriCallOptions,
  ): Promise<EmptyResponse> {
    return this.#unary(CRI_METHODS.removePodSandbox, request, options);
  }

  /** `PodSandboxStatus`. */
  podSandboxStatus(
    request: MessageInit<PodSandboxStatusRequest>,
    options?: CriCallOptions,
  ): Promise<PodSandboxStatusResponse> {
    return this.#unary(CRI_METHODS.podSandboxStatus, request, options);
  }

  /** `ListPodSandbox`. */
  listPodSandbox(
    request: MessageInit<ListPodSandboxRequest> = {},
    options?: CriCallOptions,
  ): Promise<ListPodSandboxResponse> {
    return this.#unary(CRI_METHODS.listPodSandbox, request, options);
  }

  /** `CreateContainer`. */
  createContainer(
    request: MessageInit<CreateContainerRequest>,
    options?: CriCallOptions,
  ): Promise<CreateContainerResponse> {
    return this.#unary(CRI_METHODS.createContainer, request, options);
  }

  /** `StartContainer`. */
  startContainer(
    request: MessageInit<ContainerIdRequest>,
    options?: CriCallOptions,
  ): Promise<EmptyResponse> {
    return this.#unary(CRI_METHODS.startContainer, request, options);
  }

  /** `StopContainer`. */
  stopContainer(
    request: MessageInit<StopContainerRequest>,
    options?: CriCallOptions,
  ): Promise<EmptyResponse> {
    return this.#unary(CRI_METHODS.stopContainer, request, options);
  }

  /** `RemoveContainer`. */
  removeContainer(
    request: MessageInit<ContainerIdRequest>,
    options?: CriCallOptions,
  ): Promise<EmptyResponse> {
    return this.#unary(CRI_METHODS.removeContainer, request, options);
  }

  /** `ListContainers`. */
  listContainers(
    request: MessageInit<ListContainersRequest> = {},
    options?: CriCallOptions,
  ): Promise<ListContainersResponse> {
    return this.#unary(CRI_METHODS.listContainers, request, options);
  }

  /** `ContainerStatus`. */
  containerStatus(
    request: MessageInit<ContainerStatusRequest>,
    options?: CriCallOptions,
  ): Promise<ContainerStatusResponse> {
    return this.#unary(CRI_METHODS.containerStatus, request, options);
  }

  /**
   * `GetContainerEvents`: a stream without deadline, ended by `signal`.
   *
   * @param request Empty.
   * @param options The signal that ends the stream.
   * @returns The events; throws {@linkcode CriCallError} when the stream fails.
   */
  async *getContainerEvents(
    request: MessageInit<GetEventsRequest>,
    options: { signal: AbortSignal },
  ): AsyncGenerator<ContainerEventResponse> {
    const m = CRI_METHODS.getContainerEvents;
    const { signal } = options;
    if (this.#closed || signal.aborted) return;
    const call: ClientReadableStream<ContainerEventResponse> = this.#client
      .makeServerStreamRequest<MessageInit<GetEventsRequest>, ContainerEventResponse>(
        m.path,
        (value) => toBuffer(m.request.encode(value)),
        (bytes) => m.response.decode(bytes),
        request,
        new Metadata(),
        {},
      );
    const queue: ContainerEventResponse[] = [];
    let ended = false;
    let failure: CriCallError | undefined;
    let wake: (() => void) | undefined;
    const notify = () => {
      wake?.();
      wake = undefined;
    };
    call.on("data", (event: ContainerEventResponse) => {
      if (queue.length < MAX_BUFFERED_EVENTS) queue.push(event);
      notify();
    });
    call.on("error", (err: ServiceError) => {
      if (!signal.aborted) failure = this.#error(m as CriMethod<unknown, unknown>, err);
      ended = true;
      notify();
    });
    call.on("end", () => {
      ended = true;
      notify();
    });
    const onAbort = () => {
      call.cancel();
      ended = true;
      notify();
    };
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      while (true) {
        const event = queue.shift();
        if (event !== undefined) {
          yield event;
          continue;
        }
        if (ended) break;
        await new Promise<void>((resolve) => wake = resolve);
      }
      if (failure !== undefined) throw failure;
    } finally {
      signal.removeEventListener("abort", onAbort);
      call.cancel();
    }
  }
}

/** Options of {@linkcode detectRuntimeEndpoint}. */
export interface DetectRuntimeOptions {
  /** Endpoints to try, in order. @default {DEFAULT_RUNTIME_ENDPOINTS} */
  candidates?: readonly string[];
  /** Deadline of each Version handshake. @default {2000} */
  timeoutMs?: number;
  log?: Logger;
}

/** A runtime found by {@linkcode detectRuntimeEndpoint}. */
export interface DetectedRuntime {
  readonly endpoint: string;
  readonly version: VersionResponse;
}

/**
 * Finds the node's container runtime: the first candidate socket that exists
 * and answers the Version handshake.
 *
 * @param options Candidates, handshake deadline, logger.
 * @returns The endpoint and the runtime's version.
 * @throws {SourceUnavailableError} (`reason` "not_found") naming every
 * candidate and why it was not used, when none answers.
 */
export async function detectRuntimeEndpoint(
  options: DetectRuntimeOptions = {},
): Promise<DetectedRuntime> {
  const tried: string[] = [];
  for (const endpoint of options.candidates ?? DEFAULT_RUNTIME_ENDPOINTS) {
    let path: string;
    try {
      path = parseRuntimeEndpoint(endpoint).path;
      const info = await Deno.stat(path);
      if (!info.isSocket) {
        tried.push(`"${endpoint}" (not a socket)`);
        continue;
      }
    } catch (err) {
      tried.push(`"${endpoint}" (${err instanceof Deno.errors.NotFound ? "absent" : String(err)})`);
      continue;
    }
    using client = new CriClient(endpoint, { log: options.log });
    try {
      const version = await client.version({ version: "v1" }, {
        timeoutMs: options.timeoutMs ?? 2000,
      });
      options.log?.info("found container runtime", {
        endpoint,
        runtime: version.runtimeName,
        runtimeVersion: version.runtimeVersion,
        apiVersion: version.runtimeApiVersion,
      });
      return { endpoint, version };
    } catch (err) {
      tried.push(`"${endpoint}" (${err instanceof Error ? err.message : String(err)})`);
    }
  }
  throw new SourceUnavailableError(`No container runtime answers: tried ${tried.join(", ")}`, {
    reason: "not_found",
  });
}
