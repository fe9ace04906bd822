/**
 * The error every malformed header block raises, Huffman strings included.
 *
 * @module
 */

/**
 * Raised when a header block (or a Huffman string inside one) breaks RFC 7541.
 * HPACK state is shared by the whole connection, so after this error the
 * decoder's dynamic table no longer matches the peer's: the connection must
 * end with a COMPRESSION_ERROR (RFC 9113 section 4.3), not just the stream.
 *
 * @example
 * ```ts
 * import { HpackError } from "./hpack_error.ts";
 *
 * const err = new HpackError('Cannot decode header block: index "0" is not allowed');
 * console.assert(err instanceof Error && err.name === "HpackError");
 * ```
 */
export class HpackError extends Error {
  /**
   * @param message What is wrong, with the offending value in quotes.
   * @param options The underlying `cause`, if any.
   */
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "HpackError";
  }
}
