/**
 * The error a malformed field mask raises. Its message quotes the bad path,
 * cut short, so a hostile mask of a megabyte cannot blow up a log line or a
 * gRPC status message.
 *
 * @module
 */

/** Longest part of a path or field name quoted in an error message, in UTF-16 code units. */
const MAX_QUOTED_LENGTH = 64;

/**
 * Raised when a field mask cannot be parsed: unknown field, a path through a
 * scalar or into a map, an empty segment or an empty path among others.
 * Callers answer it with INVALID_ARGUMENT.
 *
 * @example Telling the bad path apart
 * ```ts
 * import { FieldMaskError } from "./field_mask_error.ts";
 *
 * const err = new FieldMaskError("Cannot parse field mask path \"spec..x\": empty segment", {
 *   path: "spec..x",
 * });
 * console.assert(err instanceof SyntaxError && err.path === "spec..x");
 * ```
 */
export class FieldMaskError extends SyntaxError {
  /** The offending path, in full (the message holds a shortened copy). */
  readonly path: string;

  /**
   * @param message What is wrong, naming the path (see {@linkcode quotePath}).
   * @param options `path`: the offending path.
   */
  constructor(message: string, options: { path: string }) {
    super(message);
    this.name = "FieldMaskError";
    this.path = options.path;
  }
}

/**
 * Quotes a path or a field name for an error message: JSON string syntax (so
 * control characters and lone surrogates come out escaped), cut to
 * {@linkcode MAX_QUOTED_LENGTH} code units with the full length noted.
 *
 * @param value The text to quote.
 * @returns The quoted, bounded text, e.g. `"spec.containers.nam…" (1048576 chars)`.
 */
export function quotePath(value: string): string {
  if (value.length <= MAX_QUOTED_LENGTH) return JSON.stringify(value);
  let end = MAX_QUOTED_LENGTH;
  // Do not cut a surrogate pair in half.
  const last = value.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${JSON.stringify(value.slice(0, end) + "…")} (${value.length} chars)`;
}
