/**
 * ListPods, GetPod and WatchPods as plain async functions of a request and a
 * {@linkcode CallContext}. Both services (`v1alpha1.Pods` and the
 * package-less `Pods`) run these same handlers; they differ only in how a
 * watch event is framed. Calls are admitted, and watches opened, by the
 * serving core that every surface shares.
 *
 * @module
 */

import type { CachedPod, PodEncoder } from "../cache/types.ts";
import type { FieldMask, FieldMaskCache } from "../fieldmask/mod.ts";
import { type FramedMessage, frameMessage } from "../grpc/message_framing.ts";
import {
  decodeGetPodRequest,
  encodeWatchPodsEvent,
  WATCH_EVENT_TYPE,
  type WatchEventType,
} from "../proto/mod.ts";
import { SELECT_ALL } from "../query/mod.ts";
import type { ServingCore } from "../serving/mod.ts";
import type { CallContext, WatchSink } from "./call_context.ts";
import { decodeRequest, RpcError, STATUS } from "./errors.ts";
import { MaskedBytesCache } from "./masked_bytes_cache.ts";
import { sendBatches } from "./watch_batches.ts";
import { requestMask } from "./request_mask.ts";
import { bytesEqual } from "../bytes_equal.ts";

/** What the handlers read. */
export interface PodsServiceOptions {
  /** Admission, watch slots and the query engine, shared with every surface. */
  core: ServingCore;
  masks: FieldMaskCache;
  encode: PodEncoder;
}

const UID_MAX_LENGTH = 128;
/** The one frame without a pod, the same for every watcher. */
const INITIAL_SYNC_COMPLETE = frameMessage(
  encodeWatchPodsEvent(WATCH_EVENT_TYPE.INITIAL_SYNC_COMPLETE, undefined),
);
const UID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/;

/** The Pods API handlers. */
export class PodsService {
  #options: PodsServiceOptions;
  #core: ServingCore;
  #masked: MaskedBytesCache;
  #deletionMasks = new WeakMap<FieldMask, FieldMask>();

  /** @param options The serving core, masks and encoder. */
  constructor(options: PodsServiceOptions) {
    this.#options = options;
    this.#core = options.core;
    this.#masked = new MaskedBytesCache({ encode: options.encode });
  }

  /**
   * ListPods: every cached pod, sorted by UID, masked as asked.
   *
   * @param ctx The call.
   * @returns The encoded `ListPodsResponse` (also a valid `PodListResponse`).
   * @throws {Refusal} From the serving core (rate limit, shutdown, sync gate).
   * @throws {RpcError} INVALID_ARGUMENT for a bad mask.
   */
  listPods(ctx: CallContext): Promise<FramedMessage> {
    this.#core.admit(ctx.apiVersion, "list", ctx.connection);
    const mask = requestMask(ctx, this.#options.masks);
    return Promise.resolve(this.#masked.listBytes(mask, this.#core.engine.list(SELECT_ALL)));
  }

  /**
   * GetPod: one pod by UID.
   *
   * @param request The encoded `GetPodRequest`.
   * @param ctx The call.
   * @returns The encoded `GetPodResponse`.
   * @throws {Refusal} From the serving core.
   * @throws {RpcError} NOT_FOUND for an unknown UID, INVALID_ARGUMENT for a malformed one.
   */
  getPod(request: Uint8Array, ctx: CallContext): Promise<FramedMessage> {
    this.#core.admit(ctx.apiVersion, "get", ctx.connection);
    const uid = decodeRequest("GetPod", () => decodeGetPodRequest(request)).podUID;
    checkUid(uid);
    const mask = requestMask(ctx, this.#options.masks);
    const pod = this.#core.engine.lookup({ kind: "uid", uid })?.pod;
    if (pod === undefined) {
      throw new RpcError(STATUS.NOT_FOUND, `pod with UID ${quote(uid)} not found`);
    }
    return Promise.resolve(this.#masked.getResponseOf(mask, pod));
  }

  /**
   * WatchPods: the current pods as ADDED (sorted by UID), INITIAL_SYNC_COMPLETE
   * (v1alpha1 only), then every change until the client leaves.
   *
   * @param ctx The call.
   * @param sink Where frames go; its `send` applies the transport's backpressure.
   * @throws {Refusal} From the serving core (shutdown, sync gate, no free watch slot).
   * @throws {WatchDroppedError} When the watcher falls too far behind (RESOURCE_EXHAUSTED).
   * @throws {RpcError} UNAVAILABLE on shutdown, CANCELLED when the client leaves.
   */
  async watchPods(ctx: CallContext, sink: WatchSink): Promise<void> {
    this.#core.checkServing(ctx.apiVersion);
    const mask = requestMask(ctx, this.#options.masks);
    using watch = this.#core.openWatch({
      surface: ctx.apiVersion,
      selector: SELECT_ALL,
      signal: ctx.signal,
      // A MODIFIED event reaches a masked watcher only if a masked field changed.
      ...(mask.isAll ? {} : {
        visible: (prev: CachedPod, pod: CachedPod) =>
          !bytesEqual(this.#masked.bytesOf(mask, prev), this.#masked.bytesOf(mask, pod)),
      }),
    });
    const packageless = ctx.apiVersion === "v1";
    // A watcher dropped for falling behind ends with the engine's
    // WatchDroppedError: RESOURCE_EXHAUSTED through `toStatus`.
    await sendBatches(watch.batches(), sink, (item) => {
      if (item.type === "INITIAL_SYNC_COMPLETE") {
        return packageless ? undefined : INITIAL_SYNC_COMPLETE;
      }
      if (item.type === "BOOKMARK") return undefined;
      return this.#frame(packageless, WATCH_EVENT_TYPE[item.type], mask, item.pod!);
    }, { client: ctx.signal, shutdown: this.#core.shutdown });
  }

  #frame(
    packageless: boolean,
    type: WatchEventType,
    mask: FieldMask,
    pod: CachedPod,
  ): FramedMessage {
    return this.#masked.frameOf(this.#withDeletion(mask, pod), pod, type, packageless);
  }

  /**
   * A masked watcher still sees `metadata.deletionTimestamp` once a pod has
   * one: without it a client of the package-less service could not tell a
   * deletion from a change, and DESIGN.md §6 promises it never disappears.
   */
  #withDeletion(mask: FieldMask, pod: CachedPod): FieldMask {
    if (mask.isAll || pod.pod.metadata.deletionTimestamp === undefined) return mask;
    // Compiled once per mask: a deletion fans out to every masked watcher.
    let widened = this.#deletionMasks.get(mask);
    if (widened === undefined) {
      widened = this.#options.masks.parsePaths([...mask.paths, "metadata.deletionTimestamp"]);
      this.#deletionMasks.set(mask, widened);
    }
    return widened;
  }
}

function checkUid(uid: string): void {
  if (uid === "") throw new RpcError(STATUS.INVALID_ARGUMENT, "podUID must not be empty");
  if (uid.length > UID_MAX_LENGTH || !UID_PATTERN.test(uid)) {
    throw new RpcError(STATUS.INVALID_ARGUMENT, `Cannot use podUID ${quote(uid)}: malformed UID`);
  }
}

/** Quotes a client-supplied value for a message, bounded and escaped. */
function quote(value: string): string {
  const shown = value.length > 64 ? value.slice(0, 64) + "..." : value;
  return JSON.stringify(shown);
}
