/**
 * Byte-wise equality of two buffers: how the daemon tells "the same bytes
 * again" (an unchanged kubelet body, pod encoding, masked Watch event or
 * PING payload) without decoding them.
 *
 * @module
 */

/**
 * Reports whether two byte arrays hold the same bytes.
 *
 * @example Usage
 * ```ts
 * import { bytesEqual } from "./bytes_equal.ts";
 * bytesEqual(new Uint8Array([1, 2]), new Uint8Array([1, 2])); // true
 * ```
 *
 * @param a One array.
 * @param b The other.
 * @returns `true` when both have the same length and contents.
 */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a === b) return true;
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false;
  return true;
}
