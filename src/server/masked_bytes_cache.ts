/**
 * Bytes served for cached pods: masked pods kept per (mask, pod version) so
 * that a mask shared by many requests or watchers projects and encodes each
 * pod version once; whole `ListPodsResponse` bodies kept per (mask, list
 * snapshot) so that repeated ListPods calls on an unchanged cache cost a
 * lookup; and GetPod responses and watch frames kept per (mask, pod version)
 * so that a change fanned out to many watchers is framed once. Responses are
 * handed out as gRPC-framed messages, which the transport writes as they are;
 * a response of one pod holds its own few bytes and the pod's bytes, not a
 * copy of them (a copy per event type and per GetPod costs a whole node's
 * bytes again for each).
 *
 * @module
 */

import type { CachedPod, PodEncoder } from "../cache/types.ts";
import { type FieldMask, project } from "../fieldmask/mod.ts";
import {
  type FramedMessage,
  frameMessage,
  frameMessageEndingWith,
} from "../grpc/message_framing.ts";
import {
  encodeListPodsResponse,
  getPodResponseHead,
  podWatchResponseHead,
  type WatchEventType,
  watchPodsEventHead,
} from "../proto/mod.ts";

/** Options of {@linkcode MaskedBytesCache}. */
export interface MaskedBytesCacheOptions {
  encode: PodEncoder;
  /** Upper bound on the masked pod bytes held. @default {16777216} */
  maxBytes?: number;
}

/** Bookkeeping cost of one entry beyond its bytes (map slots, key, typed array header). */
const ENTRY_OVERHEAD = 96;

/**
 * One memoized list body: valid while the store returns the same `pods`
 * array. The array is held weakly: a body kept for a mask nobody asks for
 * any more must not keep a whole old snapshot of the pods alive.
 */
interface ListEntry {
  readonly pods: WeakRef<readonly CachedPod[]>;
  readonly framed: FramedMessage;
}

/** A pod's masked bytes and framed responses, for its latest version seen. */
interface PodEntry {
  readonly pod: CachedPod;
  readonly byKey: Map<string, Uint8Array | FramedMessage>;
  bytes: number;
}

/** Response slots per pod version: the four v1alpha1 event types, the package-less frame, GetPod. */
const PACKAGELESS_SLOT = 5;
const GET_SLOT = 6;

/** Upper bound on the assembled list bodies held. */
const MAX_LIST_BYTES = 16 * 1024 * 1024;

/** A byte-bounded cache of masked pod encodings, list bodies and watch frames. */
export class MaskedBytesCache {
  #encode: PodEncoder;
  #maxBytes: number;
  /**
   * Masked bytes and framed responses by pod UID, for one version of each
   * pod (the latest asked for: an older version's are dropped, never kept
   * beside it); least recently changed pod first.
   */
  #entries = new Map<string, PodEntry>();
  #bytes = 0;
  /** List bodies by mask key; oldest first. */
  #lists = new Map<string, ListEntry>();
  #listBytes = 0;
  /** Unmasked responses by pod version; collected with the version. */
  #frames = new WeakMap<CachedPod, Array<FramedMessage | undefined>>();

  /** @param options Encoder and memory bounds. */
  constructor(options: MaskedBytesCacheOptions) {
    this.#encode = options.encode;
    this.#maxBytes = options.maxBytes ?? 16 * 1024 * 1024;
  }

  /**
   * @param mask The compiled mask (`isAll` masks return the pod's own bytes).
   * @param pod A cached pod version.
   * @returns The encoding of the pod with only the masked fields.
   */
  bytesOf(mask: FieldMask, pod: CachedPod): Uint8Array {
    if (mask.isAll) return pod.bytes;
    return this.#remember(pod, mask.key, () => this.#encode(project(mask, pod.pod))) as Uint8Array;
  }

  #remember<T extends Uint8Array | FramedMessage>(pod: CachedPod, key: string, make: () => T): T {
    let entry = this.#entries.get(pod.uid);
    if (entry !== undefined && entry.pod === pod) {
      const hit = entry.byKey.get(key);
      if (hit !== undefined) return hit as T;
    }
    const value = make();
    // `make` may have remembered the masked bytes it framed: the entry it made or kept.
    entry = this.#entries.get(pod.uid);
    if (entry === undefined || entry.pod !== pod) {
      // A watcher still sending an older version gets it encoded again.
      if (entry !== undefined && entry.pod.version > pod.version) return value;
      if (entry !== undefined) this.#drop(pod.uid, entry);
      entry = { pod, byKey: new Map(), bytes: 0 };
      this.#entries.set(pod.uid, entry);
    }
    const size = sizeOf(value) + key.length + ENTRY_OVERHEAD;
    entry.byKey.set(key, value);
    entry.bytes += size;
    this.#bytes += size;
    this.#evict(pod.uid);
    return value;
  }

  #drop(uid: string, entry: PodEntry): void {
    this.#entries.delete(uid);
    this.#bytes -= entry.bytes;
  }

  /**
   * The `ListPodsResponse` body of a list of cached pods, assembled once per
   * (mask, list): the store hands out the same frozen array until its
   * content changes, so an unchanged cache answers from memory.
   *
   * @param mask The compiled mask.
   * @param pods The store's current list (sorted by UID).
   * @returns The serialized response.
   */
  listBytes(mask: FieldMask, pods: readonly CachedPod[]): FramedMessage {
    const known = this.#lists.get(mask.key);
    if (known !== undefined && known.pods.deref() === pods) return known.framed;
    const bodies = new Array<Uint8Array>(pods.length);
    for (let i = 0; i < pods.length; i++) bodies[i] = this.bytesOf(mask, pods[i]!);
    const framed = frameMessage(encodeListPodsResponse(bodies));
    if (known !== undefined) {
      this.#lists.delete(mask.key);
      this.#listBytes -= known.framed.byteLength;
    }
    this.#lists.set(mask.key, { pods: new WeakRef(pods), framed });
    this.#listBytes += framed.byteLength;
    while (this.#listBytes > MAX_LIST_BYTES && this.#lists.size > 1) {
      const [oldestKey, oldest] = this.#lists.entries().next().value as [string, ListEntry];
      this.#lists.delete(oldestKey);
      this.#listBytes -= oldest.framed.byteLength;
    }
    return framed;
  }

  /**
   * The `GetPodResponse` of a pod version, framed once per mask.
   *
   * @param mask The compiled mask.
   * @param pod The pod version.
   * @returns The framed response.
   */
  getResponseOf(mask: FieldMask, pod: CachedPod): FramedMessage {
    // Unmasked, the common case: a slot of the pod version, nothing made to ask for it.
    if (mask.isAll) return this.#slotsOf(pod)[GET_SLOT] ??= this.#getResponse(mask, pod);
    return this.#remember(pod, `get\0${mask.key}`, () => this.#getResponse(mask, pod));
  }

  #getResponse(mask: FieldMask, pod: CachedPod): FramedMessage {
    const bytes = this.bytesOf(mask, pod);
    return frameMessageEndingWith(getPodResponseHead(bytes), bytes);
  }

  /**
   * A watch frame for a pod version: `WatchPodsEvent{type, pod}` (v1alpha1)
   * or `PodWatchResponse{pod}` (package-less). Unmasked frames are built
   * once per pod version and type and shared by every watcher.
   *
   * @param mask The watcher's mask.
   * @param pod The pod version.
   * @param type The event type (v1alpha1).
   * @param packageless Whether the package-less framing is wanted.
   * @returns The serialized frame.
   */
  frameOf(
    mask: FieldMask,
    pod: CachedPod,
    type: WatchEventType,
    packageless: boolean,
  ): FramedMessage {
    const slot = packageless ? PACKAGELESS_SLOT : type;
    // Unmasked, the common case: asked for once per watcher and event, so
    // nothing is made to find a frame already there (not even an argument
    // object).
    if (mask.isAll) return this.#slotsOf(pod)[slot] ??= this.#frame(mask, pod, type, packageless);
    return this.#remember(
      pod,
      `${slot}\0${mask.key}`,
      () => this.#frame(mask, pod, type, packageless),
    );
  }

  #frame(
    mask: FieldMask,
    pod: CachedPod,
    type: WatchEventType,
    packageless: boolean,
  ): FramedMessage {
    const bytes = this.bytesOf(mask, pod);
    const head = packageless ? podWatchResponseHead(bytes) : watchPodsEventHead(type, bytes);
    return frameMessageEndingWith(head, bytes);
  }

  /** The unmasked frames of a pod version, by slot. */
  #slotsOf(pod: CachedPod): (FramedMessage | undefined)[] {
    let slots = this.#frames.get(pod);
    if (slots === undefined) this.#frames.set(pod, slots = []);
    return slots;
  }

  /** Masked pod bytes currently held (list bodies not included). */
  get size(): number {
    return this.#bytes;
  }

  /** Pods whose masked bytes are held. */
  get pods(): number {
    return this.#entries.size;
  }

  /** Evicts the least recently changed pods until the bound holds; never `keep`. */
  #evict(keep: string): void {
    if (this.#bytes <= this.#maxBytes) return;
    for (const [uid, entry] of this.#entries) {
      if (this.#bytes <= this.#maxBytes) break;
      if (uid !== keep) this.#drop(uid, entry);
    }
  }
}

/** What an entry holds of its own: a framed response's tail is the masked bytes, counted apart. */
function sizeOf(value: Uint8Array | FramedMessage): number {
  return value instanceof Uint8Array ? value.byteLength : value.head.byteLength;
}
