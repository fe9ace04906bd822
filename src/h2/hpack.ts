/**
 * HPACK, the header compression of HTTP/2 (RFC 7541): a stateful decoder and
 * encoder, one of each per connection, plus a stateless encoder whose blocks
 * may be cached and sent on any connection.
 *
 * Header names and values are byte strings. They travel here as JavaScript
 * strings holding one octet per UTF-16 code unit (latin1, not the
 * windows-1252 of `TextDecoder("latin1")`), so any octet round-trips and
 * `length` counts octets.
 *
 * The decoder is `hpack_decoder.ts`, the encoders `hpack_encoder.ts`, the
 * tables `hpack_tables.ts`; this module is their one public face.
 *
 * @module
 */

export { HpackError } from "./hpack_error.ts";
export type { HeaderField, ReadonlyDynamicTable } from "./hpack_tables.ts";
export { DEFAULT_HEADER_TABLE_SIZE } from "./_hpack_format.ts";
export { HpackDecoder, type HpackDecodeResult, type HpackDecoderOptions } from "./hpack_decoder.ts";
export {
  encodeHeaderBlockWithoutIndexing,
  ENCODER_TABLE_SIZE_LIMIT,
  HpackEncoder,
  type HpackEncoderOptions,
} from "./hpack_encoder.ts";
