/**
 * Field masks over pod JSON objects: parse the `x-kubernetes-fieldmask` (text)
 * or decoded `x-kubernetes-fieldmask-bin` (paths) form against an object
 * schema, compile once, project many pods.
 *
 * @example
 * ```ts ignore
 * import { FieldMaskCache, project } from "./src/fieldmask/mod.ts";
 *
 * const masks = new FieldMaskCache(POD_SCHEMA);
 * const mask = masks.parseText("metadata.labels,status.phase");
 * const lean = project(mask, pod);
 * ```
 *
 * @module
 */

export type { FieldKind, FieldSchema, MessageSchema, ObjectSchema } from "./schema.ts";
export { FieldMaskError } from "./field_mask_error.ts";
export {
  ALWAYS_KEPT_PATHS,
  FIELD_MASK_ALL,
  type FieldMask,
  type MaskField,
  type MaskNode,
  MAX_PATH_DEPTH,
  parseFieldMask,
  parseFieldMaskText,
} from "./parse.ts";
export { project } from "./project.ts";
export {
  DEFAULT_FIELD_MASK_CACHE_ENTRIES,
  DEFAULT_FIELD_MASK_CACHE_KEY_LENGTH,
  FieldMaskCache,
  type FieldMaskCacheOptions,
} from "./field_mask_cache.ts";
