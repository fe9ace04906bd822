/**
 * Reads the field mask a call asks for from its metadata (DESIGN.md §5).
 *
 * @module
 */

import { FIELD_MASK_ALL, type FieldMask, type FieldMaskCache } from "../fieldmask/mod.ts";
import { decodeFieldMaskBinary } from "../proto/field_mask_bin.ts";
import type { CallContext } from "./call_context.ts";
import { RpcError, STATUS } from "./errors.ts";

/** Metadata key of the comma-separated mask. */
export const FIELD_MASK_KEY = "x-kubernetes-fieldmask";
/** Metadata key of the serialized `google.protobuf.FieldMask`. */
export const FIELD_MASK_BIN_KEY = "x-kubernetes-fieldmask-bin";

const TEXT_DECODER = new TextDecoder("utf-8", { fatal: true });

/**
 * Compiles the call's mask, through the shared cache.
 *
 * @param ctx The call.
 * @param masks The compiled-mask cache.
 * @returns The mask; the whole pod when the call sent none.
 * @throws {RpcError} INVALID_ARGUMENT for several masks or an undecodable one.
 * @throws {FieldMaskError} For a mask naming a field that does not exist.
 */
export function requestMask(ctx: CallContext, masks: FieldMaskCache): FieldMask {
  const text = ctx.metadata(FIELD_MASK_KEY);
  const bin = ctx.metadata(FIELD_MASK_BIN_KEY);
  if (text.length + bin.length > 1) {
    throw new RpcError(
      STATUS.INVALID_ARGUMENT,
      `Cannot use more than one field mask: got ${text.length} "${FIELD_MASK_KEY}" and ${bin.length} "${FIELD_MASK_BIN_KEY}" values`,
    );
  }
  const value = text[0];
  if (value !== undefined) {
    return masks.parseText(typeof value === "string" ? value : decodeText(value));
  }
  const binary = bin[0];
  if (binary !== undefined) {
    let paths: string[];
    try {
      paths = decodeFieldMaskBinary(
        typeof binary === "string" ? new TextEncoder().encode(binary) : binary,
      );
    } catch (err) {
      throw new RpcError(
        STATUS.INVALID_ARGUMENT,
        `Cannot decode "${FIELD_MASK_BIN_KEY}": ${(err as Error).message}`,
      );
    }
    return masks.parsePaths(paths);
  }
  return FIELD_MASK_ALL;
}

function decodeText(bytes: Uint8Array): string {
  try {
    return TEXT_DECODER.decode(bytes);
  } catch {
    throw new RpcError(STATUS.INVALID_ARGUMENT, `Cannot decode "${FIELD_MASK_KEY}": not UTF-8`);
  }
}
