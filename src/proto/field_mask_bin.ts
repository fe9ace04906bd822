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

import { ProtoReader } from "./proto_reader.ts";
import { decodeUtf8, MAX_DEPTH, MAX_FIELD_NUMBER, WIRE_TYPE } from "./wire.ts";
import { varintSize, writeVarint } from "./writer.ts";

/** `FieldMask.paths`. */
const PATHS_FIELD = 1;

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
  const reader = new ProtoReader(bytes, "field mask");
  const paths: string[] = [];
  // Field numbers of the groups being skipped, innermost last.
  const groups: number[] = [];
  while (!reader.done) {
    const tagOffset = reader.pos;
    const tag = reader.uint64();
    const field = Math.floor(tag / 8);
    const wireType = tag % 8;
    if (field === 0 || field > MAX_FIELD_NUMBER) {
      reader.fail(`invalid field number "${field}" at offset ${tagOffset}`);
    }
    if (wireType > WIRE_TYPE.fixed32) {
      reader.fail(`invalid wire type "${wireType}" at offset ${tagOffset}`);
    }
    if (field === PATHS_FIELD && groups.length === 0) {
      if (wireType !== WIRE_TYPE.lengthDelimited) {
        reader.fail(`field "paths" has wire type "${wireType}" at offset ${tagOffset}, expected 2`);
      }
      const start = reader.pos;
      const value = reader.bytes();
      try {
        paths.push(decodeUtf8(value));
      } catch {
        reader.fail(`path at offset ${start} is not valid UTF-8`);
      }
      continue;
    }
    switch (wireType) {
      case WIRE_TYPE.varint:
        reader.uint64();
        break;
      case WIRE_TYPE.fixed64:
        reader.skip(8);
        break;
      case WIRE_TYPE.lengthDelimited:
        reader.bytes();
        break;
      case WIRE_TYPE.fixed32:
        reader.skip(4);
        break;
      case WIRE_TYPE.startGroup:
        if (groups.length >= MAX_DEPTH) {
          reader.fail(`groups nested deeper than ${MAX_DEPTH} at offset ${tagOffset}`);
        }
        groups.push(field);
        break;
      case WIRE_TYPE.endGroup:
        if (groups.pop() !== field) {
          reader.fail(`unmatched end of group at offset ${tagOffset}`);
        }
        break;
    }
  }
  if (groups.length > 0) {
    reader.fail(`truncated input, group "${groups.at(-1)}" not ended`);
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
    offset = writeVarint(out, offset, bytes.length);
    out.set(bytes, offset);
    offset += bytes.length;
  }
  return out;
}
