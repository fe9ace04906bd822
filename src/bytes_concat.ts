/**
 * Joining byte arrays into one, for the places that build a message from a
 * head and a body or gather chunks read apart.
 *
 * @module
 */

/**
 * Copies byte arrays, in order, into one new array.
 *
 * @example Usage
 * ```ts
 * import { concatBytes } from "./bytes_concat.ts";
 * concatBytes([Uint8Array.of(1), Uint8Array.of(2, 3)]); // Uint8Array [1, 2, 3]
 * ```
 *
 * @param parts The arrays.
 * @returns A new array on a plain `ArrayBuffer` (as WebCrypto takes it).
 */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.byteLength;
  }
  return out;
}
