/**
 * Time as Kubernetes writes it: `metav1.Time` is RFC 3339 in UTC with whole
 * seconds; the kubelet's `kubernetes.io/config.seen` annotation carries nine
 * fractional digits.
 *
 * @module
 */

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
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().slice(0, 19) + "Z";
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
  const base = new Date(whole).toISOString();
  const millis = base.slice(20, 23);
  return `${base.slice(0, 19)}.${millis}${String(nanos).padStart(6, "0")}Z`;
}
