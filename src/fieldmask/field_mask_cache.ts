/**
 * A bounded memo of compiled field masks, keyed by the raw mask a client sent,
 * so the masks clients actually use are compiled once and shared across
 * requests and watchers.
 *
 * @module
 */

import type { ObjectSchema } from "./schema.ts";
import { type FieldMask, parseFieldMask, parseFieldMaskText } from "./parse.ts";

/** Options of {@linkcode FieldMaskCache}. */
export interface FieldMaskCacheOptions {
  /**
   * Most masks kept; the least recently used one is evicted first.
   *
   * @default {256}
   */
  maxEntries?: number;
  /**
   * Longest raw mask (in UTF-16 code units of its cache key) that is kept.
   * Longer masks are compiled on every use but never stored, so hostile
   * masks cannot pin `maxEntries` megabytes of keys.
   *
   * @default {4096}
   */
  maxKeyLength?: number;
}

/** Default of {@linkcode FieldMaskCacheOptions.maxEntries}. */
export const DEFAULT_FIELD_MASK_CACHE_ENTRIES = 256;
/** Default of {@linkcode FieldMaskCacheOptions.maxKeyLength}. */
export const DEFAULT_FIELD_MASK_CACHE_KEY_LENGTH = 4096;

/**
 * Memoises {@linkcode parseFieldMaskText} and {@linkcode parseFieldMask} by
 * raw input, with least-recently-used eviction. Invalid masks are not
 * stored: they throw on every call (parsing is linear, so that is cheap).
 *
 * @example
 * ```ts ignore
 * const masks = new FieldMaskCache(POD_SCHEMA);
 * const mask = masks.parseText(call.metadata.get("x-kubernetes-fieldmask")[0]);
 * ```
 */
export class FieldMaskCache {
  readonly #schema: ObjectSchema;
  readonly #maxEntries: number;
  readonly #maxKeyLength: number;
  /** Map iteration order is insertion order: the first key is the least recently used. */
  readonly #entries = new Map<string, FieldMask>();

  /**
   * @param schema The object schema masks are checked against.
   * @param options Size bounds.
   * @throws {RangeError} When a bound is not a non-negative integer.
   */
  constructor(schema: ObjectSchema, options: FieldMaskCacheOptions = {}) {
    const maxEntries = options.maxEntries ?? DEFAULT_FIELD_MASK_CACHE_ENTRIES;
    const maxKeyLength = options.maxKeyLength ?? DEFAULT_FIELD_MASK_CACHE_KEY_LENGTH;
    if (!Number.isSafeInteger(maxEntries) || maxEntries < 0) {
      throw new RangeError(`Cannot create field mask cache: maxEntries "${maxEntries}" is invalid`);
    }
    if (!Number.isSafeInteger(maxKeyLength) || maxKeyLength < 0) {
      throw new RangeError(
        `Cannot create field mask cache: maxKeyLength "${maxKeyLength}" is invalid`,
      );
    }
    this.#schema = schema;
    this.#maxEntries = maxEntries;
    this.#maxKeyLength = maxKeyLength;
  }

  /** Number of masks held. */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * Compiles (or finds) the mask of an `x-kubernetes-fieldmask` value.
   *
   * @param text The comma-separated paths.
   * @returns The compiled mask.
   * @throws {FieldMaskError} When the mask is invalid.
   */
  parseText(text: string): FieldMask {
    return this.#get("t" + text, () => parseFieldMaskText(text, this.#schema));
  }

  /**
   * Compiles (or finds) the mask of a list of paths, e.g. a decoded
   * `x-kubernetes-fieldmask-bin` value.
   *
   * @param paths The paths.
   * @returns The compiled mask.
   * @throws {FieldMaskError} When the mask is invalid.
   */
  parsePaths(paths: readonly string[]): FieldMask {
    // JSON keeps ["a,b"] and ["a", "b"] apart.
    return this.#get("p" + JSON.stringify(paths), () => parseFieldMask(paths, this.#schema));
  }

  /** Forgets every mask. */
  clear(): void {
    this.#entries.clear();
  }

  #get(key: string, compile: () => FieldMask): FieldMask {
    const entries = this.#entries;
    const found = entries.get(key);
    if (found !== undefined) {
      // Move to the most recently used end.
      entries.delete(key);
      entries.set(key, found);
      return found;
    }
    const mask = compile();
    if (key.length <= this.#maxKeyLength && this.#maxEntries > 0) {
      if (entries.size >= this.#maxEntries) {
        const oldest = entries.keys().next();
        if (!oldest.done) entries.delete(oldest.value);
      }
      entries.set(key, mask);
    }
    return mask;
  }
}
