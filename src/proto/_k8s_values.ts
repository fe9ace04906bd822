/**
 * Kubernetes JSON scalar conventions: RFC 3339 times, resource quantities,
 * int-or-string values, and Go's map key order. Pure functions. Private to
 * `src/proto/`.
 *
 * @module
 */

const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

/** Seconds and nanoseconds since the Unix epoch, as `meta/v1.Time` carries them. */
export interface Timestamp {
  readonly seconds: number;
  readonly nanos: number;
}

/**
 * Parses an RFC 3339 timestamp as Go's `time.RFC3339` parser accepts it.
 *
 * @param text The JSON string.
 * @returns The instant, or `undefined` when the text is not a valid timestamp.
 */
export function parseRfc3339(text: string): Timestamp | undefined {
  const known = TIME_CACHE.get(text);
  if (known !== undefined) return known;
  const parsed = parseUtcSeconds(text) ?? parseGeneral(text);
  if (parsed === undefined) return undefined;
  // Pods repeat the same instants (creation, start, transition times) and
  // are re-encoded on every change: remember recent ones, bounded.
  if (TIME_CACHE.size >= TIME_CACHE_LIMIT) TIME_CACHE.clear();
  TIME_CACHE.set(text, parsed);
  return parsed;
}

const TIME_CACHE = new Map<string, Timestamp>();
const TIME_CACHE_LIMIT = 8192;

function digit(text: string, i: number): number {
  const c = text.charCodeAt(i) - 48;
  return c >= 0 && c <= 9 ? c : NaN;
}

/**
 * The form Kubernetes writes, `2024-05-01T10:00:00Z`, without a regular
 * expression or Date object; `undefined` for anything else (then the general
 * parser decides).
 */
function parseUtcSeconds(text: string): Timestamp | undefined {
  if (text.length !== 20) return undefined;
  const z = text.charCodeAt(19);
  const t = text.charCodeAt(10);
  if (
    (z !== 90 && z !== 122) || (t !== 84 && t !== 116) || text.charCodeAt(4) !== 45 ||
    text.charCodeAt(7) !== 45 || text.charCodeAt(13) !== 58 || text.charCodeAt(16) !== 58
  ) {
    return undefined;
  }
  const year = digit(text, 0) * 1000 + digit(text, 1) * 100 + digit(text, 2) * 10 +
    digit(text, 3);
  const month = digit(text, 5) * 10 + digit(text, 6);
  const day = digit(text, 8) * 10 + digit(text, 9);
  const hour = digit(text, 11) * 10 + digit(text, 12);
  const minute = digit(text, 14) * 10 + digit(text, 15);
  const second = digit(text, 17) * 10 + digit(text, 18);
  // NaN (a non-digit) fails every comparison below and falls through.
  if (!(year >= 100 && month >= 1 && month <= 12 && hour <= 23 && minute <= 59 && second <= 59)) {
    return undefined;
  }
  if (!(day >= 1 && day <= daysInMonth(year, month))) return undefined;
  return { seconds: Date.UTC(year, month - 1, day, hour, minute, second) / 1000, nanos: 0 };
}

function parseGeneral(text: string): Timestamp | undefined {
  const m = RFC3339.exec(text);
  if (m === null) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (month < 1 || month > 12 || hour > 23 || minute > 59 || second > 59) return undefined;
  if (day < 1 || day > daysInMonth(year, month)) return undefined;
  let offset = 0;
  if (m[9] !== undefined) {
    const oh = Number(m[10]);
    const om = Number(m[11]);
    if (oh > 23 || om > 59) return undefined;
    offset = (m[9] === "-" ? -1 : 1) * (oh * 3600 + om * 60);
  }
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, 0);
  const seconds = date.getTime() / 1000 - offset;
  const nanos = m[7] === undefined ? 0 : Number(m[7].padEnd(9, "0"));
  return { seconds, nanos };
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) {
    const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
    return leap ? 29 : 28;
  }
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** Quantity grammar as `resource.ParseQuantity` accepts it (digits required). */
const QUANTITY = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE]([+-]?\d+)|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?$/;

/**
 * Reports whether a string is a quantity the Go decoder accepts
 * (`resource.ParseQuantity`): a signed decimal number and an optional binary
 * suffix (Ki … Ei), decimal suffix (n u m k M G T P E) or exponent (e3, E-2).
 * An invalid quantity makes Go reject the whole pod, so it is never emitted.
 *
 * @param text The quantity text.
 * @returns `true` when valid.
 */
export function isValidQuantity(text: string): boolean {
  const m = QUANTITY.exec(text);
  if (m === null) return false;
  // Go parses the exponent as an int64 and uses it as an int32 scale.
  return m[1] === undefined || Math.abs(Number(m[1])) <= 2147483647;
}

/**
 * The quantity text of a JSON value: a string without surrounding white
 * space (Go's JSON decoder trims it), a JSON number in its shortest decimal
 * form (Go accepts an unquoted quantity).
 *
 * @param value A JSON value.
 * @returns The valid quantity text, or `undefined` when the value is not a valid quantity.
 */
export function quantityText(value: unknown): string | undefined {
  if (typeof value === "string") {
    const known = QUANTITY_CACHE.get(value);
    if (known !== undefined) return known === "" ? undefined : known;
    const text = value.trim();
    const result = isValidQuantity(text) ? text : undefined;
    // Few distinct quantities exist on a node ("100m", "128Mi"...): remember them, bounded.
    if (QUANTITY_CACHE.size >= QUANTITY_CACHE_LIMIT) QUANTITY_CACHE.clear();
    QUANTITY_CACHE.set(value, result ?? "");
    return result;
  }
  if (typeof value === "number" && Number.isFinite(value)) {
    const text = String(value);
    return isValidQuantity(text) ? text : undefined;
  }
  return undefined;
}

/** Quantity text by input string; `""` marks an invalid one (a valid quantity is never empty). */
const QUANTITY_CACHE = new Map<string, string>();
const QUANTITY_CACHE_LIMIT = 4096;

const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;
const INT64_LIMIT = 9223372036854775808;

/**
 * @param value A JSON value.
 * @returns `true` when it is an integer that fits an int32.
 */
export function isInt32(value: unknown): value is number {
  return Number.isInteger(value) && (value as number) >= INT32_MIN &&
    (value as number) <= INT32_MAX;
}

/**
 * @param value A JSON value.
 * @returns `true` when it is an integer that fits an int64.
 */
export function isInt64(value: unknown): value is number {
  return Number.isInteger(value) && (value as number) >= -INT64_LIMIT &&
    (value as number) < INT64_LIMIT;
}
