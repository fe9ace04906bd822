/**
 * ListPods, GetPod and WatchPods as plain async functions of a request and a
 * {@linkcode CallContext}. Both services (`v1alpha1.Pods` and the
 * package-less `Pods`) run these same handlers; they differ only in how a
 * watch event is framed.
 *
 * @module
 */

import type { CachedPod, PodEncoder, PodEvent, PodStore } from "../cache/types.ts";
import type { EventHub } from "../events/mod.ts";
import type { FieldMask, FieldMaskCache } from "../fieldmask/mod.ts";
import { type FramedMessage, frameMessage } from "../grpc/message_framing.ts";
import type { Metrics } from "../metrics/metrics.ts";
import {
  decodeGetPodRequest,
  encodeWatchPodsEvent,
  WATCH_EVENT_TYPE,
  type WatchEventType,
} from "../proto/mod.ts";
import type { CallContext, WatchSink } from "./call_context.ts";
import { MESSAGES, RpcError, STATUS } from "./errors.ts";
import { MaskedBytesCache } from "./masked_bytes_cache.ts";
import { requestMask } from "./request_mask.ts";
import { bytesEqual } from "../bytes_equal.ts";
import { numericDefault } from "../config_flags.ts";

/** What the handlers read. */
export interface PodsServiceOptions {
  store: PodStore;
  hub: EventHub;
  /** Open once every pod source completed its first read (SPEC §7). */
  gate: { readonly isOpen: boolean };
  /** Shared by ListPods and GetPod (SPEC §8). */
  limiter: { tryTake(): boolean };
  masks: FieldMaskCache;
  encode: PodEncoder;
  metrics: Metrics;
  /** Events a watcher may have pending before it is dropped. @default {`--watch-queue-size`'s} */
  watchQueueLimit?: number;
  /** Open watch streams allowed at once. @default {`--max-watchers`'s} */
  maxWatchers?: number;
  /** Aborted when the daemon shuts down. */
  shutdown: AbortSignal;
}

const UID_MAX_LENGTH = 128;
/** The one frame without a pod, the same for every watcher. */
const INITIAL_SYNC_COMPLETE = frameMessage(
  encodeWatchPodsEvent(WATCH_EVENT_TYPE.INITIAL_SYNC_COMPLETE, undefined),
);
const UID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/;

/** The Pods API handlers. */
export class PodsService {
  #o: PodsServiceOptions;
  #masked: MaskedBytesCache;
  #watchers = 0;
  #deletionMasks = new WeakMap<FieldMask, FieldMask>();

  /** @param options Store, hub, gate, limiter, masks and metrics. */
  constructor(options: PodsServiceOptions) {
    this.#o = options;
    this.#masked = new MaskedBytesCache({ encode: options.encode });
  }

  /** Open watch streams. */
  get watchers(): number {
    return this.#watchers;
  }

  /**
   * ListPods: every cached pod, sorted by UID, masked as asked.
   *
   * @param ctx The call.
   * @returns The encoded `ListPodsResponse` (also a valid `PodListResponse`).
   * @throws {RpcError} RESOURCE_EXHAUSTED, UNAVAILABLE, FAILED_PRECONDITION, INVALID_ARGUMENT.
   */
  listPods(ctx: CallContext): Promise<FramedMessage> {
    this.#admitUnary("list");
    const mask = requestMask(ctx, this.#o.masks);
    return Promise.resolve(this.#masked.listBytes(mask, this.#o.store.list()));
  }

  /**
   * GetPod: one pod by UID.
   *
   * @param request The encoded `GetPodRequest`.
   * @param ctx The call.
   * @returns The encoded `GetPodResponse`.
   * @throws {RpcError} NOT_FOUND for an unknown UID, INVALID_ARGUMENT for a malformed one.
   */
  getPod(request: Uint8Array, ctx: CallContext): Promise<FramedMessage> {
    this.#admitUnary("get");
    let uid: string;
    try {
      uid = decodeGetPodRequest(request).podUID;
    } catch (err) {
      throw new RpcError(
        STATUS.INVALID_ARGUMENT,
        `Cannot decode GetPod request: ${(err as Error).message}`,
      );
    }
    checkUid(uid);
    const mask = requestMask(ctx, this.#o.masks);
    const pod = this.#o.store.get(uid);
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
   * @throws {RpcError} RESOURCE_EXHAUSTED when the watcher falls too far behind,
   *   UNAVAILABLE on shutdown, CANCELLED when the client leaves.
   */
  async watchPods(ctx: CallContext, sink: WatchSink): Promise<void> {
    this.#checkServing();
    const maxWatchers = this.#o.maxWatchers ?? numericDefault("max-watchers");
    if (this.#watchers >= maxWatchers) {
      throw new RpcError(STATUS.RESOURCE_EXHAUSTED, MESSAGES.tooManyWatchers);
    }
    const mask = requestMask(ctx, this.#o.masks);
    const signal = AbortSignal.any([ctx.signal, this.#o.shutdown]);
    const subscription = this.#o.hub.subscribe({
      queueLimit: this.#o.watchQueueLimit ?? numericDefault("watch-queue-size"),
      signal,
      apiVersion: ctx.apiVersion,
      deferLimitUntilLive: true,
      ...(mask.isAll ? {} : { accept: (event: PodEvent) => this.#maskedChange(mask, event) }),
    });
    const gauge = this.#o.metrics.watchers.labels({ "server_api_version": ctx.apiVersion });
    this.#watchers++;
    gauge.inc();
    try {
      const packageless = ctx.apiVersion === "v1";
      for (const pod of subscription.snapshot) {
        await sink.send(this.#frame(packageless, WATCH_EVENT_TYPE.ADDED, mask, pod));
        this.#checkAlive(ctx);
      }
      if (!packageless) {
        await sink.send(INITIAL_SYNC_COMPLETE);
      }
      subscription.markLive();
      for (;;) {
        this.#checkAlive(ctx);
        const item = await subscription.next();
        if (item.state === "dropped") {
          throw new RpcError(STATUS.RESOURCE_EXHAUSTED, MESSAGES.tooSlow);
        }
        if (item.state === "closed") {
          this.#checkAlive(ctx);
          throw new RpcError(STATUS.UNAVAILABLE, MESSAGES.shuttingDown);
        }
        const { event } = item;
        await sink.send(this.#frame(packageless, WATCH_EVENT_TYPE[event.type], mask, event.pod));
      }
    } finally {
      this.#watchers--;
      gauge.dec();
    }
  }

  #frame(
    packageless: boolean,
    type: WatchEventType,
    mask: FieldMask,
    pod: CachedPod,
  ): FramedMessage {
    return this.#masked.frameOf(this.#withDeletion(mask, pod), pod, { type, packageless });
  }

  /**
   * A masked watcher still sees `metadata.deletionTimestamp` once a pod has
   * one: without it a client of the package-less service could not tell a
   * deletion from a change, and SPEC §6 promises it never disappears.
   */
  #withDeletion(mask: FieldMask, pod: CachedPod): FieldMask {
    if (mask.isAll || pod.pod.metadata.deletionTimestamp === undefined) return mask;
    // Compiled once per mask: a deletion fans out to every masked watcher.
    let widened = this.#deletionMasks.get(mask);
    if (widened === undefined) {
      widened = this.#o.masks.parsePaths([...mask.paths, "metadata.deletionTimestamp"]);
      this.#deletionMasks.set(mask, widened);
    }
    return widened;
  }

  /** A MODIFIED event reaches a masked watcher only if a masked field changed. */
  #maskedChange(mask: FieldMask, event: PodEvent): boolean {
    if (event.type !== "MODIFIED" || event.prev === undefined) return true;
    return !bytesEqual(
      this.#masked.bytesOf(mask, event.prev),
      this.#masked.bytesOf(mask, event.pod),
    );
  }

  #admitUnary(method: "list" | "get"): void {
    if (!this.#o.limiter.tryTake()) {
      this.#o.metrics.rateLimited.inc({ method });
      throw new RpcError(STATUS.RESOURCE_EXHAUSTED, MESSAGES.rateLimited);
    }
    this.#checkServing();
  }

  #checkServing(): void {
    if (this.#o.shutdown.aborted) throw new RpcError(STATUS.UNAVAILABLE, MESSAGES.shuttingDown);
    if (!this.#o.gate.isOpen) throw new RpcError(STATUS.FAILED_PRECONDITION, MESSAGES.notSynced);
  }

  #checkAlive(ctx: CallContext): void {
    if (this.#o.shutdown.aborted) throw new RpcError(STATUS.UNAVAILABLE, MESSAGES.shuttingDown);
    if (ctx.signal.aborted) throw new RpcError(STATUS.CANCELLED, "call cancelled by the client");
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
