/**
 * Time as Kubernetes writes it: `metav1.Time` is RFC 3339 in UTC with whole
 * seconds, `metav1.MicroTime` has six fraction digits, and the kubelet's
 * `kubernetes.io/config.seen` annotation nine. One formatter for all of them,
 * written field by field as Go does (a year past 9999 stays plain digits).
 *
 * @module
 */

function pad(n: number, width: number): string {
  return String(n).padStart(width, "0");
}

/**
 * Formats an instant as Kubernetes JSON does: UTC, `Z`, seconds precision for
 * `Time` (`2024-05-01T10:00:00Z`), six fraction digits for `MicroTime`.
 *
 * @example Usage
 * ```ts
 * import { formatRfc3339 } from "./rfc3339.ts";
 * formatRfc3339(0, 5); // "1970-01-01T00:00:00.000005Z"
 * ```
 *
 * @param seconds Whole seconds since the epoch.
 * @param micros `undefined` for `Time`; the microseconds for `MicroTime`.
 * @returns The RFC 3339 text.
 */
export function formatRfc3339(seconds: number, micros?: number): string {
  const date = new Date(seconds * 1000);
  const year = date.getUTCFullYear();
  const base = `${pad(year, 4)}-${pad(date.getUTCMonth() + 1, 2)}-${pad(date.getUTCDate(), 2)}T` +
    `${pad(date.getUTCHours(), 2)}:${pad(date.getUTCMinutes(), 2)}:${pad(date.getUTCSeconds(), 2)}`;
  return micros === undefined ? `${base}Z` : `${base}.${pad(micros, 6)}Z`;
}

/**
 * Formats epoch milliseconds as Kubernetes does a `metav1.Time` (the
 * fraction is cut, not rounded, as Go's `Truncate(time.Second)`).
 *
 * @example Usage
 * ```ts
 * import { rfc3339 } from "./rfc3339.ts";
 * rfc3339(Date.UTC(2026, 0, 2, 3, 4, 5, 999)); // "2026-01-02T03:04:05Z"
 * ```
 *
 * @param ms Milliseconds since the Unix epoch.
 * @returns An RFC 3339 UTC string with whole seconds, e.g. `2024-05-01T12:00:00Z`.
 */
export function rfc3339(ms: number): string {
  return formatRfc3339(Math.floor(ms / 1000));
}

/**
 * Formats epoch milliseconds with nanosecond digits, as the kubelet writes
 * the `kubernetes.io/config.seen` annotation.
 *
 * @example Usage
 * ```ts
 * import { rfc3339Nano } from "./rfc3339.ts";
 * rfc3339Nano(Date.UTC(2026, 0, 2, 3, 4, 5, 6)); // "2026-01-02T03:04:05.006000000Z"
 * ```
 *
 * @param ms Milliseconds since the Unix epoch.
 * @param nanos Extra nanoseconds below the millisecond (0 to 999999). @default {0}
 * @returns An RFC 3339 UTC string with nine fractional digits.
 */
export function rfc3339Nano(ms: number, nanos = 0): string {
  const whole = Math.floor(ms);
  const millis = ((whole % 1000) + 1000) % 1000;
  const base = formatRfc3339(Math.floor(whole / 1000)).slice(0, -1);
  return `${base}.${pad(millis, 3)}${pad(nanos, 6)}Z`;
}
