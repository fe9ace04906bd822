/**
 * Constants of the protobuf wire format shared by the reader
 * (`proto_reader.ts`) and the writer (`writer.ts`), and the strict UTF-8
 * decoding of text read from hostile input.
 *
 * @module
 */

/** Wire types of the protobuf encoding. */
export const WIRE_TYPE = {
  varint: 0,
  fixed64: 1,
  lengthDelimited: 2,
  startGroup: 3,
  endGroup: 4,
  fixed32: 5,
} as const;

/** Largest field number protobuf allows. */
export const MAX_FIELD_NUMBER = 0x1fffffff;
/**
 * How deep messages and groups may nest in what is read (protobuf's default
 * recursion limit): the one bound on recursion over hostile input.
 */
export const MAX_DEPTH = 100;

/** UTF-8 decoding that rejects invalid input. */
const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
/** Longest text read without the decoder when it is all ASCII (a UID is 36). */
const SHORT_ASCII_BYTES = 64;

/**
 * Decodes UTF-8 strictly. Short ASCII text (UIDs, names, field paths) is read
 * here: a call into the runtime's decoder cost twice as much as the loop.
 *
 * @param bytes The encoded text.
 * @returns The text.
 * @throws {TypeError} For invalid UTF-8.
 */
export function decodeUtf8(bytes: Uint8Array): string {
  const length = bytes.byteLength;
  if (length <= SHORT_ASCII_BYTES) {
    // Copied into a plain array as it is checked: `apply` reads one faster than a typed array.
    const codes = new Array<number>(length);
    let i = 0;
    for (; i < length; i++) {
      const c = bytes[i]!;
      if (c >= 0x80) break;
      codes[i] = c;
    }
    if (i === length) return String.fromCharCode.apply(null, codes);
  }
  return STRICT_UTF8.decode(bytes);
}
