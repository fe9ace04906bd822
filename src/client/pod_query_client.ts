/**
 * Calls of `podsapi.v1.PodQuery` (DESIGN.md §14) on a {@linkcode PodsClient}'s
 * connection: selected lists, lookups by name, container ID and IP,
 * tombstones, and watches that resume from a token. A daemon without the
 * service (a kubelet) answers UNIMPLEMENTED; callers fall back to
 * `v1alpha1.Pods`.
 *
 * @module
 */

import type { PodObject } from "../model/pod.ts";
import {
  decodeListDevicesResponse,
  decodeListResponse,
  decodePod,
  decodeQueryGetResponse,
  decodeWatchEvent,
  encodeGetRequest,
  encodeListDevicesRequest,
  encodeListRequest,
  encodeWatchRequest,
  type GetKeyMessage,
  type ListDevicesResponseMessage,
  type PodResourcesMessage,
  type ProcessContainerMessage,
  QUERY_EVENT_TYPE,
  type SelectorMessage,
} from "../proto/mod.ts";
import { GrpcError, STATUS } from "../grpc/status.ts";
import type { PodsClient } from "./pods_client.ts";

/** What to select: empty parts select everything. */
export type PodSelection = Partial<SelectorMessage>;

/** The key of a lookup. */
export type PodKey = GetKeyMessage;

/** Options of one PodQuery call. */
export interface QueryCallOptions {
  /** Field mask paths (the request's `mask`); default: the client's. */
  fields?: readonly string[];
  /** Cancels the call. */
  signal?: AbortSignal;
  /**
   * Also return what pods hold (devices, exclusive CPUs, memory, DRA
   * claims: the kubelet's podresources API, joined by the daemon).
   */
  includeResources?: boolean;
}

/** What one pod holds, with its UID (`podsapi.v1.PodResources`). */
export type PodResourcesInfo = PodResourcesMessage;

/** The node's devices with who holds each (`ListDevices`). */
export type NodeDevicesInfo = ListDevicesResponseMessage;

/** A PodQuery watch event's type. */
export type QueryEventName =
  | "ADDED"
  | "MODIFIED"
  | "DELETED"
  | "INITIAL_SYNC_COMPLETE"
  | "BOOKMARK";

/** One event of `PodQuery/Watch`. */
export interface QueryWatchEvent {
  /** ADDED, MODIFIED, DELETED, INITIAL_SYNC_COMPLETE or BOOKMARK. */
  readonly type: QueryEventName;
  /** The pod; absent for INITIAL_SYNC_COMPLETE and BOOKMARK. */
  readonly pod?: PodObject;
  /** Where to resume after this event; empty when the daemon sent none. */
  readonly resumeToken: string;
  /** What the pod holds, for a watch with `includeResources` (absent: nothing). */
  readonly resources?: PodResourcesInfo;
}

/** Options of {@linkcode PodQueryClient.watch}. */
export interface QueryWatchOptions extends QueryCallOptions {
  /** Namespace, label and field selectors. */
  selector?: PodSelection;
  /** Resume after this token (no initial list); empty: list first. */
  resumeToken?: string;
  /** Ask for a BOOKMARK at least this often when nothing else is sent. */
  bookmarkSeconds?: number;
}

const EVENT_NAMES: ReadonlyMap<number, QueryEventName> = new Map([
  [QUERY_EVENT_TYPE.ADDED, "ADDED"],
  [QUERY_EVENT_TYPE.MODIFIED, "MODIFIED"],
  [QUERY_EVENT_TYPE.DELETED, "DELETED"],
  [QUERY_EVENT_TYPE.INITIAL_SYNC_COMPLETE, "INITIAL_SYNC_COMPLETE"],
  [QUERY_EVENT_TYPE.BOOKMARK, "BOOKMARK"],
]);

const SERVICE = "/podsapi.v1.PodQuery";

/**
 * `podsapi.v1.PodQuery` on a {@linkcode PodsClient}'s connection (same
 * socket, retries and connection diagnosis).
 *
 * @example Look a pod up by its IP
 * ```ts
 * import { PodQueryClient, PodsClient } from "./mod.ts";
 * using client = new PodsClient();
 * const query = new PodQueryClient(client);
 * const { pod } = await query.get({ kind: "podIp", ip: "10.244.1.7" });
 * console.log(pod.metadata.namespace, pod.metadata.name);
 * ```
 */
export class PodQueryClient {
  readonly #client: PodsClient;
  readonly #fields: readonly string[];

  /**
   * Uses `client`'s connection.
   *
   * @param client The connection.
   * @param options Default field mask.
   */
  constructor(client: PodsClient, options: { fields?: readonly string[] } = {}) {
    this.#client = client;
    this.#fields = options.fields ?? client.fields;
  }

  #mask(options: QueryCallOptions): { mask?: readonly string[] } {
    const fields = options.fields ?? this.#fields;
    return fields.length > 0 ? { mask: fields } : {};
  }

  /** The mask goes in the request here, never in metadata as well. */
  #call(options: QueryCallOptions): { fields: readonly string[]; signal?: AbortSignal } {
    return options.signal === undefined ? { fields: [] } : { fields: [], signal: options.signal };
  }

  /**
   * The selected pods (`List`).
   *
   * @param selector Namespace, label and field selectors.
   * @param options Mask and cancellation.
   * @returns The pods and the token to watch from.
   * @throws {GrpcError} UNIMPLEMENTED without PodQuery; INVALID_ARGUMENT for a bad selector.
   */
  async list(
    selector: PodSelection = {},
    options: QueryCallOptions = {},
  ): Promise<{ pods: PodObject[]; resumeToken: string; resources: PodResourcesInfo[] }> {
    const res = decodeListResponse(
      await this.#client.unary(
        `${SERVICE}/List`,
        encodeListRequest({
          selector,
          includeResources: options.includeResources ?? false,
          ...this.#mask(options),
        }),
        this.#call(options),
      ),
    );
    return {
      pods: res.pods.map(decodePod),
      resumeToken: res.resumeToken,
      resources: res.resources,
    };
  }

  /**
   * One pod by UID, namespace and name, container ID or IP (`Get`).
   *
   * @param key The lookup.
   * @param options Mask, cancellation, and whether tombstones count.
   * @returns The pod, whether it is a tombstone, and a resume token.
   * @throws {GrpcError} NOT_FOUND; INVALID_ARGUMENT for an ambiguous prefix; UNIMPLEMENTED.
   */
  async get(
    key: PodKey,
    options: QueryCallOptions & { includeDeleted?: boolean } = {},
  ): Promise<{
    pod: PodObject;
    deleted: boolean;
    resumeToken: string;
    resources: PodResourcesInfo | undefined;
    deviceContainers: string[];
    /** A process lookup (`pid`, `cgroupId`, `cgroupPath`, `mntns`): its container. */
    container: ProcessContainerMessage | undefined;
  }> {
    const res = decodeQueryGetResponse(
      await this.#client.unary(
        `${SERVICE}/Get`,
        encodeGetRequest({
          key,
          includeDeleted: options.includeDeleted ?? false,
          includeResources: options.includeResources ?? false,
          ...this.#mask(options),
        }),
        this.#call(options),
      ),
    );
    return {
      pod: decodePod(res.pod),
      deleted: res.deleted,
      resumeToken: res.resumeToken,
      resources: res.resources,
      deviceContainers: res.deviceContainers,
      container: res.container,
    };
  }

  /**
   * The node's devices (`ListDevices`): each with the pods and containers
   * holding it, or free; the exclusive CPUs, allocatable and free.
   *
   * @param resourceName Only this resource (`cpu`: CPUs alone); empty: all.
   * @param options Cancellation.
   * @returns The devices, and whether the daemon reads the podresources API.
   * @throws {GrpcError} UNIMPLEMENTED from a daemon without ListDevices (or a kubelet).
   */
  async listDevices(
    resourceName = "",
    options: { signal?: AbortSignal } = {},
  ): Promise<NodeDevicesInfo> {
    return decodeListDevicesResponse(
      await this.#client.unary(
        `${SERVICE}/ListDevices`,
        encodeListDevicesRequest(resourceName),
        this.#call(options),
      ),
    );
  }

  /**
   * `Watch`: from a token, exactly the changes after it; without one, the
   * selected pods, INITIAL_SYNC_COMPLETE, then changes. Ends quietly when
   * `options.signal` aborts.
   *
   * @param options Selector, token, bookmarks, mask and cancellation.
   * @returns The events.
   * @throws {GrpcError} OUT_OF_RANGE for a token too old or of another daemon; UNIMPLEMENTED.
   */
  async *watch(options: QueryWatchOptions = {}): AsyncGenerator<QueryWatchEvent> {
    const request = encodeWatchRequest({
      selector: options.selector ?? {},
      resumeToken: options.resumeToken ?? "",
      bookmarkSeconds: options.bookmarkSeconds ?? 0,
      includeResources: options.includeResources ?? false,
      ...this.#mask(options),
    });
    for await (
      const message of this.#client.serverStream(`${SERVICE}/Watch`, this.#call(options), request)
    ) {
      const event = decodeWatchEvent(message);
      const type = EVENT_NAMES.get(event.type);
      if (type === undefined) {
        throw new GrpcError(STATUS.INTERNAL, `Unknown watch event type ${event.type}`);
      }
      const resources = event.resources === undefined ? {} : { resources: event.resources };
      yield event.pod !== undefined && event.pod.byteLength > 0
        ? { type, pod: decodePod(event.pod), resumeToken: event.resumeToken, ...resources }
        : { type, resumeToken: event.resumeToken };
    }
  }
}
