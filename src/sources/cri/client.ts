/**
 * A typed client of the CRI `runtime.v1.RuntimeService` over the runtime's
 * UNIX socket (our gRPC layer with the codecs of `cri_codec.ts`), plus detection of
 * the usual containerd and CRI-O sockets.
 *
 * @module
 */

import { GrpcChannel } from "../../grpc/client.ts";
import { GrpcError, STATUS } from "../../grpc/status.ts";
import type { Logger } from "../../log.ts";
import { SourceUnavailableError } from "../mod.ts";
import { CRI_METHODS, type CriMethod } from "./_service.ts";
import { type CriMessageCodec, criMessageCodec } from "./cri_codec.ts";
import {
  RuntimeSocketAccessError,
  runtimeSocketAccessError,
  socketDenial,
} from "./socket_access.ts";
import {
  CONTAINER_KEY,
  decodeListReusing,
  type ItemKeyFields,
  ListIds,
  POD_SANDBOX_KEY,
} from "./list_reuse.ts";
import {
  type Container,
  type ContainerEventResponse,
  type ContainerIdRequest,
  type ContainerStatusRequest,
  type ContainerStatusResponse,
  type CreateContainerRequest,
  type CreateContainerResponse,
  CRI_STATUS,
  CriCallError,
  type CriCallOptions,
  type CriListOptions,
  type EmptyResponse,
  type GetEventsRequest,
  type ListContainersRequest,
  type ListContainersResponse,
  type ListPodSandboxRequest,
  type ListPodSandboxResponse,
  type MessageInit,
  type PodSandbox,
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
import { numericDefault } from "../../config_flags.ts";

/** The kubelet's default `--runtime-request-timeout`: 2 minutes. */
export const DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS = numericDefault("runtime-request-timeout");

/** The list items' keys and codecs, for the items a list decodes one by one. */
const POD_SANDBOX_LIST = {
  key: POD_SANDBOX_KEY,
  item: criMessageCodec<PodSandbox>("PodSandbox"),
};
const CONTAINER_LIST = { key: CONTAINER_KEY, item: criMessageCodec<Container>("Container") };

/** Largest message accepted from the runtime: 16 MiB, as the kubelet's CRI client. */
export const DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

/**
 * Sockets tried by {@linkcode detectRuntimeEndpoint}, in order: containerd,
 * CRI-O (both usual paths), k3s's embedded containerd, cri-dockerd. crictl's
 * list (containerd, CRI-O, cri-dockerd) with k3s's socket after CRI-O: a k3s
 * node serves CRI there and nowhere else, and a containerd of its own at the
 * usual path (Docker's, say) is tried first as crictl would.
 */
export const DEFAULT_RUNTIME_ENDPOINTS: readonly string[] = [
  "unix:///run/containerd/containerd.sock",
  "unix:///run/crio/crio.sock",
  "unix:///var/run/crio/crio.sock",
  "unix:///run/k3s/containerd/containerd.sock",
  "unix:///var/run/cri-dockerd.sock",
];

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
 * @returns The socket path and the `unix://` target.
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
   * @default {DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS}
   */
  requestTimeoutMs?: number;
  /** Largest message in either direction. @default {16777216} */
  maxMessageBytes?: number;
}

/**
 * CRI `runtime.v1.RuntimeService` client on a UNIX socket. Every call has a
 * deadline; a call fails with {@linkcode CriCallError} carrying the gRPC code.
 * After the runtime goes away (down, restarting, or a graceful GOAWAY) the
 * next call connects afresh.
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
  /** The target, `unix:///...`. */
  readonly target: string;
  readonly #timeoutMs: number;
  readonly #channel: GrpcChannel;
  /** Each list method's last IDs (`list_reuse.ts`). */
  readonly #listIds = new Map<string, ListIds>();
  #closed = false;

  /**
   * Creates the client; it connects on the first call.
   *
   * @param endpoint `unix:///path` or an absolute socket path.
   * @param options Default deadline and message size limit.
   * @throws {TypeError} For an endpoint that is not a unix socket path.
   */
  constructor(endpoint: string, options: CriClientOptions = {}) {
    this.endpoint = endpoint;
    const { path, target } = parseRuntimeEndpoint(endpoint);
    this.target = target;
    this.#timeoutMs = options.requestTimeoutMs ?? DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS;
    this.#channel = new GrpcChannel({ transport: "unix", path }, {
      maxReceiveMessageBytes: options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
      userAgent: "pods-api-cri",
    });
  }

  /** Closes the channel; calls in flight fail. */
  close(): void {
    this.#closed = true;
    this.#channel.close();
  }

  /** Same as {@linkcode CriClient.close}. */
  [Symbol.dispose](): void {
    this.close();
  }

  #error(m: CriMethod<unknown, unknown>, err: unknown): CriCallError {
    const code = err instanceof GrpcError ? err.code : STATUS.UNKNOWN;
    const name = Object.entries(STATUS).find(([, v]) => v === code)?.[0] ?? String(code);
    return new CriCallError(`${name}: ${err instanceof Error ? err.message : String(err)}`, {
      code,
      method: m.rpc,
      cause: err,
    });
  }

  async #unary<Req, Res>(
    m: CriMethod<Req, Res>,
    request: MessageInit<Req>,
    options: CriCallOptions = {},
    decode: (bytes: Uint8Array) => Res = (bytes) => m.response.decode(bytes),
  ): Promise<Res> {
    const signal = options.signal;
    if (this.#closed || signal?.aborted) {
      throw new CriCallError(this.#closed ? "client is closed" : "call was aborted", {
        code: CRI_STATUS.cancelled,
        method: m.rpc,
        cause: signal?.reason,
      });
    }
    try {
      // Read where it arrived (the buffer is used again): every decoder here copies what it keeps.
      return await this.#channel.unaryDecoded(
        m.path,
        m.request.encode(request),
        (bytes) => {
          try {
            return decode(bytes);
          } catch (err) {
            throw new CriCallError(
              `INTERNAL: cannot decode the runtime's answer: ${(err as Error).message}`,
              { code: CRI_STATUS.internal, method: m.rpc, cause: err },
            );
          }
        },
        {
          timeoutMs: options.timeoutMs ?? this.#timeoutMs,
          ...(signal === undefined ? {} : { signal }),
        },
      );
    } catch (err) {
      if (err instanceof CriCallError) throw err;
      throw this.#error(m as CriMethod<unknown, unknown>, err);
    }
  }

  /** A list call: decoded with the caller's held items when it gives them (`list_reuse.ts`). */
  #list<Req, Res, T>(
    m: CriMethod<Req, Res>,
    request: MessageInit<Req>,
    options: CriListOptions<T> | undefined,
    list: { key: ItemKeyFields; item: CriMessageCodec<T> },
    wrap: (items: T[]) => Res,
  ): Promise<Res> {
    const reuse = options?.reuse;
    if (reuse === undefined) return this.#unary(m, request, options);
    const ids = this.#listIds.get(m.path) ?? new ListIds();
    this.#listIds.set(m.path, ids);
    return this.#unary(m, request, options, (bytes) => {
      const items = decodeListReusing(bytes, 1, list.key, list.item, reuse, ids);
      return items === undefined ? m.response.decode(bytes) : wrap(items);
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

  /** `ListPodSandbox`; with `options.reuse`, held items are not decoded again. */
  listPodSandbox(
    request: MessageInit<ListPodSandboxRequest> = {},
    options?: CriListOptions<PodSandbox>,
  ): Promise<ListPodSandboxResponse> {
    return this.#list(CRI_METHODS.listPodSandbox, request, options, POD_SANDBOX_LIST, (items) => ({
      items,
    }));
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

  /** `ListContainers`; with `options.reuse`, held items are not decoded again. */
  listContainers(
    request: MessageInit<ListContainersRequest> = {},
    options?: CriListOptions<Container>,
  ): Promise<ListContainersResponse> {
    return this.#list(CRI_METHODS.listContainers, request, options, CONTAINER_LIST, (
      containers,
    ) => ({ containers }));
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
    const call = this.#channel.serverStream(m.path, m.request.encode(request), { signal });
    try {
      for await (const bytes of call) yield m.response.decode(bytes);
    } catch (err) {
      if (!signal.aborted) throw this.#error(m as CriMethod<unknown, unknown>, err);
    } finally {
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
 * @throws {RuntimeSocketAccessError} When none answers, a candidate exists
 * but may not be opened (Deno permissions or the system's), and no other
 * candidate is there that might still come up: waiting cannot help.
 * @throws {SourceUnavailableError} (`reason` "not_found") naming every
 * candidate and why it was not used, when none answers.
 */
export async function detectRuntimeEndpoint(
  options: DetectRuntimeOptions = {},
): Promise<DetectedRuntime> {
  const tried: string[] = [];
  let refused: RuntimeSocketAccessError | undefined;
  let present = false;
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
      // Not allowed to look is not "there": only a socket seen and refused stops the wait.
      tried.push(`"${endpoint}" (${err instanceof Deno.errors.NotFound ? "absent" : String(err)})`);
      continue;
    }
    using client = new CriClient(endpoint);
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
      const denial = socketDenial(err);
      if (denial === undefined) present = true;
      else refused ??= runtimeSocketAccessError(path, denial);
    }
  }
  if (refused !== undefined && !present) throw refused;
  throw new SourceUnavailableError(`No container runtime answers: tried ${tried.join(", ")}`, {
    reason: "not_found",
  });
}
