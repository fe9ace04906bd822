/**
 * Checks on data read from a container runtime. A runtime is trusted to be
 * the node's truth, not to be well-formed: strings may hold invalid UTF-8
 * (decoded as U+FFFD), times may be absurd, maps may be huge. These helpers
 * return `undefined` (or drop entries) instead of throwing, and report each
 * problem through a callback so the caller can count it.
 *
 * @module
 */

import { rfc3339 } from "../../model/rfc3339.ts";

/** Why an item (or part of one) from the runtime was skipped; a metric label value. */
export type RejectReason =
  | "invalid_id"
  | "duplicate_id"
  | "invalid_identity"
  | "invalid_utf8"
  | "invalid_timestamp"
  | "oversized_map"
  | "invalid_label"
  | "invalid_annotation"
  | "invalid_ip"
  | "invalid_status";

/** Receives one rejection: the reason and a short description for the log. */
export type RejectHandler = (reason: RejectReason, detail: string) => void;

/** Longest ID accepted (containerd and CRI-O use 64 hex digits). */
export const MAX_ID_LENGTH = 256;
/** Longest object name (a DNS subdomain). */
export const MAX_NAME_LENGTH = 253;
/** Longest namespace name (a DNS label). */
export const MAX_NAMESPACE_LENGTH = 63;
/** Longest UID accepted. */
export const MAX_UID_LENGTH = 128;
/** Most entries kept in a label or annotation map. */
export const MAX_MAP_ENTRIES = 4096;
/** Largest label or annotation map, keys plus values (Kubernetes' annotation limit). */
export const MAX_MAP_CHARS = 256 * 1024;
/** Longest map key: a 253-character prefix, "/", a 63-character name. */
export const MAX_KEY_LENGTH = 317;
/** Longest termination message kept (the kubelet's per-container limit is 4096 bytes). */
export const MAX_MESSAGE_LENGTH = 4096;
/** Longest reason or image string kept. */
export const MAX_SHORT_TEXT_LENGTH = 1024;

/** Latest time accepted, in nanoseconds: 2100-01-01T00:00:00Z. */
const MAX_TIME_NS = 4_102_444_800e9;
/** Earliest time accepted, in nanoseconds: one second after the epoch. */
const MIN_TIME_NS = 1e9;

// deno-lint-ignore no-control-regex
const CONTROL_CHARS_REGEXP = /[\u0000-\u001f\u007f]/;
const REPLACEMENT_CHAR = "\ufffd";

/**
 * Reports whether a string came from valid UTF-8: no U+FFFD (what invalid
 * bytes decode to) and no lone surrogate.
 *
 * @param value The string.
 * @returns `true` when the string is clean.
 */
export function isCleanText(value: string): boolean {
  return !value.includes(REPLACEMENT_CHAR) && value.isWellFormed();
}

/**
 * Validates an identifier-like string (ID, name, namespace, UID, container
 * name): non-empty, at most `maxLength`, clean, no control characters.
 *
 * @param value The candidate.
 * @param maxLength Longest accepted length.
 * @returns The string, or `undefined` when it fails a check.
 */
export function identifier(value: unknown, maxLength: number): string | undefined {
  if (typeof value !== "string" || value === "" || value.length > maxLength) return undefined;
  if (CONTROL_CHARS_REGEXP.test(value) || !isCleanText(value)) return undefined;
  return value;
}

/**
 * Cleans a free-text string (reason, message, image): ill-formed parts are
 * replaced, and the text is cut at `maxLength`.
 *
 * @param value The candidate.
 * @param maxLength Longest kept length.
 * @returns The cleaned text ("" for a non-string).
 */
export function freeText(value: unknown, maxLength: number): string {
  if (typeof value !== "string") return "";
  const text = value.length > maxLength ? value.slice(0, maxLength) : value;
  return text.isWellFormed() ? text : text.toWellFormed();
}

/**
 * Converts a CRI time (nanoseconds since the epoch) to RFC 3339 with second
 * precision, as Kubernetes serializes `metav1.Time`.
 *
 * @param ns Nanoseconds; 0 means "not set".
 * @param onReject Receives `invalid_timestamp` for an absurd value.
 * @param what Names the field in the rejection detail.
 * @returns The time, or `undefined` when unset or absurd.
 */
export function criTime(ns: number, onReject: RejectHandler, what: string): string | undefined {
  if (ns === 0) return undefined;
  if (!Number.isFinite(ns) || ns < MIN_TIME_NS || ns > MAX_TIME_NS) {
    onReject("invalid_timestamp", `${what} is ${ns} ns`);
    return undefined;
  }
  return rfc3339(Math.floor(ns / 1e9) * 1000);
}

/**
 * A CRI time usable for ordering: absurd or unset values sort as 0.
 *
 * @param ns Nanoseconds since the epoch.
 * @returns `ns`, or 0 when it is out of range.
 */
export function sortableTime(ns: number): number {
  return Number.isFinite(ns) && ns >= MIN_TIME_NS && ns <= MAX_TIME_NS ? ns : 0;
}

/** Options of {@linkcode cleanMap}. */
export interface CleanMapOptions {
  /** Keys to leave out (the kubelet's internal keys). */
  omit?: ReadonlySet<string>;
  /** Receives the rejections. */
  onReject: RejectHandler;
  /** Names the map in rejection details. */
  what: string;
}

/**
 * Copies a label or annotation map, sorted by key, leaving out internal keys
 * and dropping entries whose key or value is not clean text. A map over the
 * size limits is dropped whole (reported once): a runtime that sends one is
 * not telling the truth about this pod's metadata.
 *
 * @param map The runtime's map.
 * @param options Keys to omit, the rejection handler and a name for details.
 * @returns The cleaned map, or `undefined` when nothing is left.
 */
export function cleanMap(
  map: Readonly<Record<string, string>> | null | undefined,
  options: CleanMapOptions,
): Record<string, string> | undefined {
  if (map === null || map === undefined || typeof map !== "object") return undefined;
  const keys = Object.keys(map);
  if (keys.length === 0) return undefined;
  if (keys.length > MAX_MAP_ENTRIES) {
    options.onReject("oversized_map", `${options.what} has ${keys.length} entries`);
    return undefined;
  }
  let size = 0;
  for (const key of keys) {
    const value = map[key];
    size += key.length + (typeof value === "string" ? value.length : 0);
  }
  if (size > MAX_MAP_CHARS) {
    options.onReject("oversized_map", `${options.what} holds ${size} characters`);
    return undefined;
  }
  keys.sort();
  const out: Record<string, string> = {};
  let kept = 0;
  for (const key of keys) {
    if (options.omit?.has(key)) continue;
    const value = map[key];
    if (
      typeof value !== "string" || key === "" || key.length > MAX_KEY_LENGTH ||
      CONTROL_CHARS_REGEXP.test(key) || !isCleanText(key) || !isCleanText(value)
    ) {
      options.onReject("invalid_label", `${options.what} entry ${JSON.stringify(key)} dropped`);
      continue;
    }
    out[key] = value;
    kept++;
  }
  return kept === 0 ? undefined : out;
}

const IPV4_REGEXP =
  /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;
const IPV6_CHARS_REGEXP = /^[0-9a-fA-F:.]{2,45}$/;

/** The family of an IP address string. */
export type IpFamily = 4 | 6;

/**
 * Returns the family of a textual IP address, or `undefined` when it is not
 * one (zone suffixes and CIDRs are not IP addresses here).
 *
 * @param value The candidate.
 * @returns 4, 6 or `undefined`.
 */
export function ipFamily(value: string): IpFamily | undefined {
  if (IPV4_REGEXP.test(value)) return 4;
  if (!IPV6_CHARS_REGEXP.test(value) || !value.includes(":")) return undefined;
  try {
    // The URL parser implements the full IPv6 grammar (compression, embedded IPv4).
    new URL(`http://[${value}]/`);
    return 6;
  } catch {
    return undefined;
  }
}
