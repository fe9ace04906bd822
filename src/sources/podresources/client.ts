/**
 * A client of the kubelet's podresources API (`v1.PodResourcesLister` on
 * `/var/lib/kubelet/pod-resources/kubelet.sock`) on the project's own gRPC
 * channel: `List`, `GetAllocatableResources` and `Get`, each with a
 * deadline, decoded strictly into the values of `model/pod_resources.ts`.
 *
 * @module
 */

import { type CallOptions, GrpcChannel } from "../../grpc/client.ts";
import { GrpcError, STATUS } from "../../grpc/status.ts";
import type { AllocatableResources, PodResources } from "../../model/pod_resources.ts";
import {
  decodeAllocatableResourcesResponse,
  decodeGetPodResourcesResponse,
  decodeListPodResourcesResponse,
  encodeGetPodResourcesRequest,
  PODRESOURCES_METHODS,
} from "../../proto/podresources_wire.ts";

/** The kubelet's podresources socket, used when `--pod-resources-endpoint` is empty. */
export const DEFAULT_POD_RESOURCES_ENDPOINT = "unix:///var/lib/kubelet/pod-resources/kubelet.sock";

/** Largest answer accepted: the kubelet's own limit for this API, 16 MiB. */
const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

/** Deadline of one call unless the caller gives one: the kubelet answers from memory. */
const DEFAULT_TIMEOUT_MS = 10_000;

const EMPTY = new Uint8Array(0);

/**
 * Reads a podresources endpoint: `unix:///path` (the kubelet's form) or an
 * absolute path.
 *
 * @example Usage
 * ```ts
 * import { podResourcesSocketPath } from "./client.ts";
 * podResourcesSocketPath("unix:///var/lib/kubelet/pod-resources/kubelet.sock");
 * // "/var/lib/kubelet/pod-resources/kubelet.sock"
 * ```
 *
 * @param endpoint The endpoint.
 * @returns The socket path.
 * @throws {TypeError} For another scheme or a relative path.
 */
export function podResourcesSocketPath(endpoint: string): string {
  let path = endpoint;
  if (endpoint.startsWith("unix://")) path = endpoint.slice("unix://".length);
  else if (/^[a-z][a-z0-9+.-]*:/i.test(endpoint)) {
    throw new TypeError(
      `Cannot use pod resources endpoint "${endpoint}": only unix sockets are supported`,
    );
  }
  if (!path.startsWith("/")) {
    throw new TypeError(
      `Cannot use pod resources endpoint "${endpoint}": the path must be absolute`,
    );
  }
  return path;
}

/** Options of one podresources call. */
export interface PodResourcesCallOptions {
  signal?: AbortSignal;
  /** Deadline, ms. @default {10000} */
  timeoutMs?: number;
}

/** The calls of `v1.PodResourcesLister` (a fake stands in for it in tests). */
export interface PodResourcesApi {
  /** Every active pod's resources, as the kubelet lists them. */
  list(options?: PodResourcesCallOptions): Promise<PodResources[]>;
  /** The node's allocatable devices, CPUs and memory. */
  getAllocatableResources(options?: PodResourcesCallOptions): Promise<AllocatableResources>;
}

/**
 * `v1.PodResourcesLister` on a UNIX socket. A call fails with a
 * {@linkcode GrpcError}: the kubelet's code (RESOURCE_EXHAUSTED when its rate
 * limit refuses the call), UNAVAILABLE when nothing answers, INTERNAL for an
 * answer that does not decode.
 *
 * @example Usage
 * ```ts ignore
 * import { PodResourcesClient } from "./client.ts";
 * using client = new PodResourcesClient("unix:///var/lib/kubelet/pod-resources/kubelet.sock");
 * for (const pod of await client.list()) console.log(pod.namespace, pod.name);
 * ```
 */
export class PodResourcesClient implements PodResourcesApi, Disposable {
  /** The socket path. */
  readonly path: string;
  readonly #channel: GrpcChannel;

  /**
   * Creates the client; it connects on the first call.
   *
   * @param endpoint `unix:///path` or an absolute path.
   * @throws {TypeError} For an endpoint that is not a unix socket path.
   */
  constructor(endpoint: string) {
    this.path = podResourcesSocketPath(endpoint);
    this.#channel = new GrpcChannel({ transport: "unix", path: this.path }, {
      maxReceiveMessageBytes: MAX_MESSAGE_BYTES,
      userAgent: "pods-api-podresources",
    });
  }

  /** Closes the connection. */
  close(): void {
    this.#channel.close();
  }

  /** Same as {@linkcode PodResourcesClient.close}. */
  [Symbol.dispose](): void {
    this.close();
  }

  /**
   * `List`.
   *
   * @param options Cancellation and deadline.
   * @returns Every active pod's resources (not normalized).
   * @throws {GrpcError} As the class says.
   */
  async list(options: PodResourcesCallOptions = {}): Promise<PodResources[]> {
    const bytes = await this.#call(PODRESOURCES_METHODS.list, EMPTY, options);
    return decoded(() => decodeListPodResourcesResponse(bytes));
  }

  /**
   * `GetAllocatableResources`.
   *
   * @param options Cancellation and deadline.
   * @returns The node's allocatable resources (not normalized).
   * @throws {GrpcError} As the class says.
   */
  async getAllocatableResources(
    options: PodResourcesCallOptions = {},
  ): Promise<AllocatableResources> {
    const bytes = await this.#call(PODRESOURCES_METHODS.getAllocatableResources, EMPTY, options);
    return decoded(() => decodeAllocatableResourcesResponse(bytes));
  }

  /**
   * `Get` (one pod by namespace and name; the kubelet answers NOT_FOUND for
   * a pod it does not run, and UNIMPLEMENTED-like errors where the call is
   * behind a feature gate).
   *
   * @param namespace The pod's namespace.
   * @param name The pod's name.
   * @param options Cancellation and deadline.
   * @returns The pod's resources, or `undefined` when the answer names none.
   * @throws {GrpcError} As the class says.
   */
  async get(
    namespace: string,
    name: string,
    options: PodResourcesCallOptions = {},
  ): Promise<PodResources | undefined> {
    const request = encodeGetPodResourcesRequest(namespace, name);
    const bytes = await this.#call(PODRESOURCES_METHODS.get, request, options);
    return decoded(() => decodeGetPodResourcesResponse(bytes));
  }

  #call(path: string, request: Uint8Array, options: PodResourcesCallOptions) {
    const call: CallOptions = { timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS };
    if (options.signal !== undefined) call.signal = options.signal;
    return this.#channel.unary(path, request, call);
  }
}

function decoded<T>(decode: () => T): T {
  try {
    return decode();
  } catch (err) {
    throw new GrpcError(
      STATUS.INTERNAL,
      `Cannot read the kubelet's podresources answer: ${(err as Error).message}`,
    );
  }
}
