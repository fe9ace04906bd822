/**
 * Bytes of masked pods, kept per (mask, pod version) so that a mask shared by
 * many requests or watchers projects and encodes each pod version once.
 *
 * @module
 */

import type { CachedPod, PodEncoder } from "../cache/types.ts";
import { type FieldMask, project } from "../fieldmask/mod.ts";

/** Options of {@linkcode MaskedBytesCache}. */
export interface MaskedBytesCacheOptions {
  encode: PodEncoder;
  /** Upper bound on the bytes held. @default {33554432} */
  maxBytes?: number;
}

/** A byte-bounded LRU of masked pod encodings. */
export class MaskedBytesCache {
  #encode: PodEncoder;
  #maxBytes: number;
  #entries = new Map<string, Uint8Array>();
  #bytes = 0;

  /** @param options Encoder and memory bound. */
  constructor(options: MaskedBytesCacheOptions) {
    this.#encode = options.encode;
    this.#maxBytes = options.maxBytes ?? 32 * 1024 * 1024;
  }

  /**
   * @param mask The compiled mask (`isAll` masks return the pod's own bytes).
   * @param pod A cached pod version.
   * @returns The encoding of the pod with only the masked fields.
   */
  bytesOf(mask: FieldMask, pod: CachedPod): Uint8Array {
    if (mask.isAll) return pod.bytes;
    const key = `${mask.key}\u0000${pod.uid}\u0000${pod.version}`;
    const hit = this.#entries.get(key);
    if (hit !== undefined) {
      this.#entries.delete(key);
      this.#entries.set(key, hit);
      return hit;
    }
    const bytes = this.#encode(project(mask, pod.pod));
    this.#entries.set(key, bytes);
    this.#bytes += bytes.byteLength + key.length;
    while (this.#bytes > this.#maxBytes && this.#entries.size > 1) {
      const oldest = this.#entries.keys().next().value as string;
      this.#bytes -= this.#entries.get(oldest)!.byteLength + oldest.length;
      this.#entries.delete(oldest);
    }
    return bytes;
  }

  /** Bytes currently held. */
  get size(): number {
    return this.#bytes;
  }
}
