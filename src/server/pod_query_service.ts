/**
 * `podsapi.v1.PodQuery` (DESIGN.md §14): List, Get and Watch as plain async
 * functions of the request bytes and a {@linkcode CallContext}, over the
 * query engine. Admitted by the serving core as every surface is (List and
 * Get draw from their connection's bucket, then from the shared one); same
 * masks and errors as the Pods services.
 *
 * @module
 */

import type { CachedPod, PodEncoder } from "../cache/types.ts";
import { FIELD_MASK_ALL, type FieldMask, type FieldMaskCache } from "../fieldmask/mod.ts";
import {
  decodeGetRequest,
  decodeListRequest,
  decodeWatchRequest,
  encodeListResponse,
  encodePodResourcesMessage,
  encodeQueryGetResponse,
  encodeWatchEvent,
  QUERY_EVENT_TYPE,
  type SelectorMessage,
} from "../proto/mod.ts";
import { compileSelector, type LookupKey, type PodSelector, quote } from "../query/mod.ts";
import type { ServingCore } from "../serving/mod.ts";
import { containersHoldingDevice } from "../model/pod_resources.ts";
import { type DevicesView, listDevices } from "./list_devices.ts";
import type { CallContext, WatchSink } from "./call_context.ts";
import { frameMessage } from "../grpc/message_framing.ts";
import { sendBatches } from "./watch_batches.ts";
import { decodeRequest, RpcError, STATUS } from "./errors.ts";
import { MaskedBytesCache } from "./masked_bytes_cache.ts";
import { FIELD_MASK_BIN_KEY, FIELD_MASK_KEY, requestMask } from "./request_mask.ts";
import { bytesEqual } from "../bytes_equal.ts";
import type { ProcessIndex } from "../sources/process/mod.ts";
import { isProcessKey, lookupProcess, type ProcessGetKey } from "./process_lookup.ts";

/** What the PodQuery handlers read. */
export interface PodQueryServiceOptions {
  /** Admission, watch slots and the query engine, shared with every surface. */
  core: ServingCore;
  masks: FieldMaskCache;
  encode: PodEncoder;
  /** The node's devices for ListDevices; absent: the podresources API is off. */
  devices?: DevicesView;
  /** Which container a process is in; absent: no source knows processes. */
  processes?: ProcessIndex;
}

/** Longest bookmark period honoured; a larger request is clamped. */
const MAX_BOOKMARK_SECONDS = 3600;
const ENCODER = new TextEncoder();

/** A request seen before: what it parsed to, and its answer while the cache is unchanged. */
interface Memo<P> {
  readonly request: Uint8Array;
  readonly parsed: P;
  /** The cache position `body` was made at: the same position means no change since. */
  position: number;
  body: Uint8Array | undefined;
}

/** A List request, parsed. */
interface ParsedList {
  readonly selector: PodSelector;
  readonly mask: FieldMask;
  readonly includeResources: boolean;
}

/** A Get request, parsed. */
interface ParsedGet {
  readonly key: LookupKey | ProcessGetKey;
  readonly mask: FieldMask;
  readonly includeDeleted: boolean;
  readonly includeResources: boolean;
}

/** Most list bodies kept. */
const LIST_MEMO_LIMIT = 64;
/** Most Get bodies kept (agents look up the pods of their node again and again). */
const GET_MEMO_LIMIT = 1024;
/** Requests longer than this are not memoized (selectors are short). */
const MAX_MEMO_REQUEST = 1024;

/** FNV-1a over the request: a cheap key for the memo (equality is still checked). */
function fnv1a(bytes: Uint8Array): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) h = Math.imul(h ^ bytes[i]!, 0x01000193);
  return h >>> 0;
}

function hasMetadataMask(ctx: CallContext): boolean {
  return ctx.metadata(FIELD_MASK_KEY).length > 0 || ctx.metadata(FIELD_MASK_BIN_KEY).length > 0;
}

/** The PodQuery handlers. */
export class PodQueryService {
  #options: PodQueryServiceOptions;
  #core: ServingCore;
  #masked: MaskedBytesCache;
  /** List bodies by a hash of the request bytes, valid while the cache is unchanged. */
  #lists = new Map<number, Memo<ParsedList>>();
  #token: { position: number; bytes: Uint8Array } | undefined;
  /** Get bodies, the same way. */
  #gets = new Map<number, Memo<ParsedGet>>();

  /** @param options The serving core, masks and encoder. */
  constructor(options: PodQueryServiceOptions) {
    this.#options = options;
    this.#core = options.core;
    this.#masked = new MaskedBytesCache({ encode: options.encode });
  }

  /**
   * List: the selected pods, sorted by UID, masked, with the position's token.
   *
   * @param request The encoded `ListRequest`.
   * @param ctx The call.
   * @returns The encoded `ListResponse`.
   * @throws {Refusal} From the serving core (rate limits, shutdown, sync gate).
   * @throws {RpcError} INVALID_ARGUMENT.
   */
  list(request: Uint8Array, ctx: CallContext): Promise<Uint8Array> {
    this.#core.admit(ctx.apiVersion, "list", ctx.connection);
    const engine = this.#core.engine;
    const position = engine.position;
    // Agents repeat the same request: the same bytes get the same body while
    // the cache is unchanged, and are decoded and parsed only once.
    const memo = this.#memo(this.#lists, request, ctx);
    if (memo?.body !== undefined && memo.position === position) return Promise.resolve(memo.body);
    const parsed = memo?.parsed ?? this.#parseList(request, ctx);
    const pods = engine.list(parsed.selector);
    const frames = new Array<Uint8Array>(pods.length);
    for (let i = 0; i < pods.length; i++) {
      frames[i] = this.#masked.bytesOf(parsed.mask, pods[i]!);
    }
    const body = encodeListResponse(
      frames,
      this.#tokenBytes(position),
      parsed.includeResources ? resourcesOf(pods) : [],
    );
    this.#remember(this.#lists, LIST_MEMO_LIMIT, request, ctx, memo, parsed, position, body);
    return Promise.resolve(body);
  }

  /**
   * Get: one pod by UID, namespace/name, container ID or pod IP; a deleted
   * pod's tombstone when `include_deleted` is set.
   *
   * @param request The encoded `GetRequest`.
   * @param ctx The call.
   * @returns The encoded `GetResponse`.
   * @throws {RpcError} NOT_FOUND, INVALID_ARGUMENT (no key, ambiguous prefix, bad IP).
   * @throws {Refusal} From the serving core, as List.
   */
  get(request: Uint8Array, ctx: CallContext): Promise<Uint8Array> {
    this.#core.admit(ctx.apiVersion, "get", ctx.connection);
    const engine = this.#core.engine;
    const position = engine.position;
    const memo = this.#memo(this.#gets, request, ctx);
    if (memo?.body !== undefined && memo.position === position) return Promise.resolve(memo.body);
    const parsed = memo?.parsed ?? this.#parseGet(request, ctx);
    if (isProcessKey(parsed.key)) {
      // Not memoized: the same PID can be another process a moment later.
      const { pod, container } = lookupProcess(parsed.key, this.#options.processes, engine);
      return Promise.resolve(encodeQueryGetResponse(
        this.#masked.bytesOf(parsed.mask, pod),
        this.#tokenBytes(position),
        false,
        {
          ...(parsed.includeResources ? { resources: resourcesOf([pod])[0] } : {}),
          container,
        },
      ));
    }
    const found = engine.lookup(parsed.key, parsed.includeDeleted);
    if (found === undefined) {
      throw new RpcError(STATUS.NOT_FOUND, `pod with ${describe(parsed.key)} not found`);
    }
    const key = parsed.key;
    const body = encodeQueryGetResponse(
      this.#masked.bytesOf(parsed.mask, found.pod),
      this.#tokenBytes(position),
      found.deleted,
      ...(parsed.includeResources || key.kind === "deviceId"
        ? [{
          resources: resourcesOf([found.pod])[0],
          deviceContainers: key.kind === "deviceId"
            ? containersHoldingDevice(found.pod.resources, key.id)
            : [],
        }]
        : []),
    );
    // A tombstone expires with time, not with a cache change: its body is not kept.
    this.#remember(
      this.#gets,
      GET_MEMO_LIMIT,
      request,
      ctx,
      memo,
      parsed,
      position,
      found.deleted ? undefined : body,
    );
    return Promise.resolve(body);
  }

  #parseList(request: Uint8Array, ctx: CallContext): ParsedList {
    const req = decodeRequest("List", () => decodeListRequest(request));
    return {
      selector: compileSelector(selectorSpec(req.selector)),
      mask: this.#mask(req.mask, ctx),
      includeResources: req.includeResources,
    };
  }

  #parseGet(request: Uint8Array, ctx: CallContext): ParsedGet {
    const req = decodeRequest("Get", () => decodeGetRequest(request));
    if (req.key === undefined) {
      throw new RpcError(
        STATUS.INVALID_ARGUMENT,
        "Cannot get a pod without a key: set uid, name, container_id, pod_ip, device_id, host_pid, cgroup_id, cgroup_path or mntns_inode",
      );
    }
    return {
      key: isProcessKey(req.key) ? req.key : checkKey(req.key),
      mask: this.#mask(req.mask, ctx),
      includeDeleted: req.includeDeleted,
      includeResources: req.includeResources,
    };
  }

  /** The memo of these request bytes, if any (never for a mask sent as metadata). */
  #memo<P>(memos: Map<number, Memo<P>>, request: Uint8Array, ctx: CallContext) {
    if (request.length > MAX_MEMO_REQUEST || hasMetadataMask(ctx)) return undefined;
    const memo = memos.get(fnv1a(request));
    return memo !== undefined && bytesEqual(memo.request, request) ? memo : undefined;
  }

  #remember<P>(
    memos: Map<number, Memo<P>>,
    limit: number,
    request: Uint8Array,
    ctx: CallContext,
    memo: Memo<P> | undefined,
    parsed: P,
    position: number,
    body: Uint8Array | undefined,
  ): void {
    if (memo !== undefined) {
      // The same request again after a change: refreshed in place, no copy.
      memo.position = position;
      memo.body = body;
      return;
    }
    if (request.length > MAX_MEMO_REQUEST || hasMetadataMask(ctx)) return;
    const hash = fnv1a(request);
    memos.delete(hash);
    memos.set(hash, { request: request.slice(), parsed, position, body });
    if (memos.size > limit) memos.delete(memos.keys().next().value!);
  }

  /**
   * Watch: the selected pods as ADDED and INITIAL_SYNC_COMPLETE (or, with a
   * resume token, the changes after it), then every change to the
   * selection, with BOOKMARKs when asked. Every event carries the token to
   * resume after it.
   *
   * @param request The encoded `WatchRequest`.
   * @param ctx The call.
   * @param sink Where frames go; `send` applies the transport's backpressure.
   * @throws {RpcError} OUT_OF_RANGE for a token too old, RESOURCE_EXHAUSTED when the
   *   watcher falls behind, UNAVAILABLE on shutdown, CANCELLED when the client leaves.
   */
  async watch(request: Uint8Array, ctx: CallContext, sink: WatchSink): Promise<void> {
    this.#core.checkServing(ctx.apiVersion);
    const req = decodeRequest("Watch", () => decodeWatchRequest(request));
    const selector: PodSelector = compileSelector(selectorSpec(req.selector));
    const mask = this.#mask(req.mask, ctx);
    using watch = this.#core.openWatch({
      surface: ctx.apiVersion,
      selector,
      resumeToken: req.resumeToken,
      bookmarkMs: Math.min(req.bookmarkSeconds, MAX_BOOKMARK_SECONDS) * 1000,
      signal: ctx.signal,
      resources: req.includeResources,
      ...(mask.isAll ? {} : {
        visible: (prev: CachedPod, pod: CachedPod) =>
          !bytesEqual(this.#masked.bytesOf(mask, prev), this.#masked.bytesOf(mask, pod)),
      }),
    });
    const engine = this.#core.engine;
    await sendBatches(watch.batches(), sink, (item) => {
      const token = item.position > 0 ? engine.token(item.position) : "";
      const pod = item.pod === undefined ? undefined : this.#masked.bytesOf(mask, item.pod);
      const held = req.includeResources && item.pod?.resources !== undefined
        ? encodePodResourcesMessage(item.pod.uid, item.pod.resources)
        : undefined;
      return frameMessage(encodeWatchEvent(QUERY_EVENT_TYPE[item.type], pod, token, held));
    }, { client: ctx.signal, shutdown: this.#core.shutdown });
  }

  /**
   * ListDevices: the node's devices with their holders (or free), and its
   * exclusive CPUs, allocatable and free. Rate limited as List.
   *
   * @param request The encoded `ListDevicesRequest`.
   * @param ctx The call.
   * @returns The encoded `ListDevicesResponse`.
   * @throws {RpcError} INVALID_ARGUMENT, and the admission errors of List.
   */
  listDevices(request: Uint8Array, ctx: CallContext): Promise<Uint8Array> {
    this.#core.admit(ctx.apiVersion, "list", ctx.connection);
    const engine = this.#core.engine;
    const token = engine.token(engine.position);
    return Promise.resolve(listDevices(request, this.#options.devices, token));
  }

  /** The UTF-8 token of a position, encoded once per position. */
  #tokenBytes(position: number): Uint8Array {
    if (this.#token?.position !== position) {
      this.#token = { position, bytes: ENCODER.encode(this.#core.engine.token(position)) };
    }
    return this.#token.bytes;
  }

  #mask(paths: readonly string[] | undefined, ctx: CallContext): FieldMask {
    if (paths === undefined) return requestMask(ctx, this.#options.masks);
    return paths.length === 0 ? FIELD_MASK_ALL : this.#options.masks.parsePaths(paths);
  }
}

function selectorSpec(selector: SelectorMessage) {
  return {
    namespace: selector.namespace,
    labelSelector: selector.labelSelector,
    fieldSelector: selector.fieldSelector,
    resourceName: selector.resourceName,
    deviceId: selector.deviceId,
  };
}

/** The serialized `PodResources` of the pods that hold something. */
function resourcesOf(pods: readonly CachedPod[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (const pod of pods) {
    if (pod.resources !== undefined) out.push(encodePodResourcesMessage(pod.uid, pod.resources));
  }
  return out;
}

function checkKey(key: LookupKey): LookupKey {
  const empty = (what: string) =>
    new RpcError(STATUS.INVALID_ARGUMENT, `Cannot get a pod by an empty ${what}`);
  switch (key.kind) {
    case "uid":
      if (key.uid === "") throw empty("uid");
      break;
    case "name":
      if (key.namespace === "" || key.name === "") throw empty("namespace or name");
      break;
    case "containerId":
      if (key.id === "") throw empty("container_id");
      break;
    case "podIp":
      if (key.ip === "") throw empty("pod_ip");
      break;
    case "deviceId":
      if (key.id === "") throw empty("device_id");
      break;
  }
  return key;
}

function describe(key: LookupKey): string {
  switch (key.kind) {
    case "uid":
      return `UID ${quote(key.uid)}`;
    case "name":
      return `name ${quote(`${key.namespace}/${key.name}`)}`;
    case "containerId":
      return `container ID ${quote(key.id)}`;
    case "podIp":
      return `IP ${quote(key.ip)}`;
    case "deviceId":
      return `device ${quote(key.id)}`;
  }
}
