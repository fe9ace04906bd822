/**
 * Time formatting for simulated pods: Kubernetes writes `metav1.Time` as an
 * RFC 3339 string with second precision.
 *
 * @module
 */

/**
 * Formats epoch milliseconds as Kubernetes does a `metav1.Time`.
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
 * @param ms Milliseconds since the Unix epoch.
 * @param nanos Extra nanoseconds below the millisecond (0 to 999999).
 * @returns An RFC 3339 UTC string with nine fractional digits.
 */
export function rfc3339Nano(ms: number, nanos: number): string {
  const whole = Math.floor(ms);
  const base = new Date(whole).toISOString();
  const millis = base.slice(20, 23);
  return `${base.slice(0, 19)}.${millis}${String(nanos).padStart(6, "0")}Z`;
}
