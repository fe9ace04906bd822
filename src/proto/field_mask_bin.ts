/**
 * The binary form of a field mask (gRPC metadata `x-kubernetes-fieldmask-bin`):
 * a serialized `google.protobuf.FieldMask`, whose only field is
 * `repeated string paths = 1`. Decoded by hand: the format is tiny, and the
 * input is hostile, so every length is checked before it is used.
 *
 * The paths are taken as they are. The kubelet's API uses JSON (camelCase)
 * field names here too, not the snake_case names of the protobuf JSON
 * mapping of FieldMask.
 *
 * @module
 */

/** Wire types of the protobuf encoding. */
const WIRE_TYPE = {
  varint: 0,
  fixed64: 1,
  lengthDelimited: 2,
  startGroup: 3,
  endGroup: 4,
  fixed32: 5,
} as const;

/** `FieldMask.paths`. */
const PATHS_FIELD = 1;
/** Largest field number protobuf allows. */
const MAX_FIELD_NUMBER = 0x1fffffff;
/** Deepest nesting of groups skipped, as protobuf decoders bound recursion. */
const MAX_GROUP_DEPTH = 100;
/** A varint has at most 10 bytes. */
const MAX_VARINT_BYTES = 10;

const UTF8_DECODER = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const UTF8_ENCODER = new TextEncoder();

/**
 * Decodes a serialized `google.protobuf.FieldMask` into its paths. Fields
 * other than `paths` are skipped, whatever their wire type. Empty input is a
 * mask with no paths.
 *
 * @example
 * ```ts
 * import { decodeFieldMaskBinary, encodeFieldMaskBinary } from "./field_mask_bin.ts";
 *
 * const paths = decodeFieldMaskBinary(encodeFieldMaskBinary(["status.phase"]));
 * console.assert(paths[0] === "status.phase");
 * ```
 *
 * @param bytes The serialized message.
 * @returns The paths, in wire order.
 * @throws {TypeError} When the input is truncated or malformed (bad varint,
 * bad tag, unbalanced group, `paths` with the wrong wire type) or a path is
 * not valid UTF-8.
 */
export function decodeFieldMaskBinary(bytes: Uint8Array): string[] {
  const reader = new Reader(bytes);
  const paths: string[] = [];
  // Field numbers of the groups being skipped, innermost last.
  const groups: number[] = [];
  while (!reader.done) {
    const tagOffset = reader.offset;
    const tag = reader.varint();
    const field = Math.floor(tag / 8);
    const wireType = tag % 8;
    if (field === 0 || field > MAX_FIELD_NUMBER) {
      throw new TypeError(
        `Cannot decode field mask: invalid field number "${field}" at offset ${tagOffset}`,
      );
    }
    if (wireType > WIRE_TYPE.fixed32) {
      throw new TypeError(
        `Cannot decode field mask: invalid wire type "${wireType}" at offset ${tagOffset}`,
      );
    }
    if (field === PATHS_FIELD && groups.length === 0) {
      if (wireType !== WIRE_TYPE.lengthDelimited) {
        throw new TypeError(
          `Cannot decode field mask: field "paths" has wire type "${wireType}" at offset ${tagOffset}, expected 2`,
        );
      }
      const start = reader.offset;
      const value = reader.lengthDelimited();
      try {
        paths.push(UTF8_DECODER.decode(value));
      } catch {
        throw new TypeError(`Cannot decode field mask: path at offset ${start} is not valid UTF-8`);
      }
      continue;
    }
    switch (wireType) {
      case WIRE_TYPE.varint:
        reader.varint();
        break;
      case WIRE_TYPE.fixed64:
        reader.skip(8);
        break;
      case WIRE_TYPE.lengthDelimited:
        reader.lengthDelimited();
        break;
      case WIRE_TYPE.fixed32:
        reader.skip(4);
        break;
      case WIRE_TYPE.startGroup:
        if (groups.length >= MAX_GROUP_DEPTH) {
          throw new TypeError(
            `Cannot decode field mask: groups nested deeper than ${MAX_GROUP_DEPTH} at offset ${tagOffset}`,
          );
        }
        groups.push(field);
        break;
      case WIRE_TYPE.endGroup:
        if (groups.pop() !== field) {
          throw new TypeError(
            `Cannot decode field mask: unmatched end of group at offset ${tagOffset}`,
          );
        }
        break;
    }
  }
  if (groups.length > 0) {
    throw new TypeError(
      `Cannot decode field mask: truncated input, group "${groups.at(-1)}" not ended`,
    );
  }
  return paths;
}

/**
 * Serializes paths as a `google.protobuf.FieldMask`, the
 * `x-kubernetes-fieldmask-bin` value a client sends.
 *
 * @example
 * ```ts
 * import { encodeFieldMaskBinary } from "./field_mask_bin.ts";
 *
 * const bytes = encodeFieldMaskBinary(["metadata.name"]);
 * console.assert(bytes[0] === 0x0a && bytes[1] === 13);
 * ```
 *
 * @param paths The paths.
 * @returns The serialized message.
 * @throws {TypeError} When a path is not well-formed UTF-16 (a lone surrogate
 * cannot be encoded as UTF-8).
 */
export function encodeFieldMaskBinary(paths: readonly string[]): Uint8Array {
  const encoded: Uint8Array[] = [];
  let size = 0;
  for (const path of paths) {
    if (!path.isWellFormed()) {
      throw new TypeError(
        `Cannot encode field mask: path ${JSON.stringify(path.slice(0, 64))} is not well-formed`,
      );
    }
    const bytes = UTF8_ENCODER.encode(path);
    encoded.push(bytes);
    size += 1 + varintSize(bytes.length) + bytes.length;
  }
  const out = new Uint8Array(size);
  let offset = 0;
  for (const bytes of encoded) {
    out[offset++] = PATHS_FIELD * 8 + WIRE_TYPE.lengthDelimited;
    let length = bytes.length;
    while (length >= 0x80) {
      out[offset++] = (length & 0x7f) | 0x80;
      length >>>= 7;
    }
    out[offset++] = length;
    out.set(bytes, offset);
    offset += bytes.length;
  }
  return out;
}

function varintSize(value: number): number {
  let size = 1;
  while (value >= 0x80) {
    value >>>= 7;
    size++;
  }
  return size;
}

/** A cursor over the input that throws on every overrun. */
class Reader {
  readonly #bytes: Uint8Array;
  #offset = 0;

  constructor(bytes: Uint8Array) {
    this.#bytes = bytes;
  }

  get offset(): number {
    return this.#offset;
  }

  get done(): boolean {
    return this.#offset >= this.#bytes.length;
  }

  /**
   * Reads a varint. Values above 2^53 lose precision, which only matters for
   * values that are rejected anyway (lengths past the end, field numbers).
   */
  varint(): number {
    const bytes = this.#bytes;
    const start = this.#offset;
    let value = 0;
    let scale = 1;
    for (let i = 0; i < MAX_VARINT_BYTES; i++) {
      const at = start + i;
      if (at >= bytes.length) {
        throw new TypeError(`Cannot decode field mask: truncated varint at offset ${start}`);
      }
      const byte = bytes[at] as number;
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) {
        this.#offset = at + 1;
        return value;
      }
      scale *= 128;
    }
    throw new TypeError(`Cannot decode field mask: varint longer than 10 bytes at offset ${start}`);
  }

  lengthDelimited(): Uint8Array {
    const start = this.#offset;
    const length = this.varint();
    const from = this.#offset;
    if (length > this.#bytes.length - from) {
      throw new TypeError(
        `Cannot decode field mask: length ${length} at offset ${start} runs past the end of the input`,
      );
    }
    this.#offset = from + length;
    return this.#bytes.subarray(from, from + length);
  }

  skip(count: number): void {
    if (count > this.#bytes.length - this.#offset) {
      throw new TypeError(
        `Cannot decode field mask: truncated fixed-size field at offset ${this.#offset}`,
      );
    }
    this.#offset += count;
  }
}
