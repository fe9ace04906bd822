/**
 * Go-style durations (`500ms`, `1s`, `3m`, `1h30m`), as the kubelet's flags take them.
 *
 * @module
 */

const UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};
const PART_REGEXP = /(\d+(?:\.\d+)?)(ms|s|m|h)/y;

/**
 * Parses a duration.
 *
 * @example Usage
 * ```ts
 * import { parseDuration } from "./duration.ts";
 * parseDuration("1m30s"); // 90000
 * ```
 *
 * @param text A duration like `1s` or `1h30m`; `0` alone is allowed.
 * @returns Milliseconds.
 * @throws {SyntaxError} When `text` is not a duration.
 */
export function parseDuration(text: string): number {
  if (text === "0") return 0;
  let ms = 0;
  let at = 0;
  PART_REGEXP.lastIndex = 0;
  while (at < text.length) {
    PART_REGEXP.lastIndex = at;
    const match = PART_REGEXP.exec(text);
    if (match === null) break;
    ms += Number(match[1]) * UNIT_MS[match[2]!]!;
    at = PART_REGEXP.lastIndex;
  }
  if (at !== text.length || text === "") {
    throw new SyntaxError(`Cannot parse duration "${text}": use forms like 500ms, 1s, 3m, 1h`);
  }
  return Math.round(ms);
}
