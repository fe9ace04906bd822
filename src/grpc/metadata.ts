/**
 * What gRPC puts in HTTP/2 headers: `grpc-timeout`, the percent-encoded
 * `grpc-message`, binary (`-bin`) metadata in base64, and the header names
 * no application may set.
 *
 * @module
 */

import { GRPC_REQUEST_HEADERS } from "../h2/header_rules.ts";
import type { HeaderField } from "../h2/hpack.ts";

const TIMEOUT_UNITS: Readonly<Record<string, number>> = {
  H: 3_600_000,
  M: 60_000,
  S: 1000,
  m: 1,
  u: 0.001,
  n: 0.000001,
};

/**
 * Parses `grpc-timeout` (up to 8 digits and a unit: H M S m u n).
 *
 * @param value The header value.
 * @returns Milliseconds, or `undefined` for a malformed value.
 */
export function parseTimeout(value: string): number | undefined {
  const match = /^(\d{1,8})([HMSmun])$/.exec(value);
  if (match === null) return undefined;
  return Number(match[1]) * TIMEOUT_UNITS[match[2]!]!;
}

/**
 * Formats a timeout for `grpc-timeout`, rounding up so a deadline is never shortened.
 *
 * @param ms Milliseconds (at least 0).
 * @returns e.g. `1500m`, `120S`.
 * @throws {RangeError} For NaN.
 */
export function formatTimeout(ms: number): string {
  if (Number.isNaN(ms)) throw new RangeError(`Cannot send a timeout of "${ms}" ms`);
  const whole = Math.max(0, Math.ceil(ms));
  if (whole < 100_000_000) return `${whole}m`;
  const seconds = Math.ceil(whole / 1000);
  if (seconds < 100_000_000) return `${seconds}S`;
  return `${Math.min(99_999_999, Math.ceil(seconds / 3600))}H`;
}

/**
 * Percent-encodes a status message as gRPC requires (RFC 3986 style over
 * UTF-8; printable ASCII other than `%` stays).
 *
 * @param message The message.
 * @returns The header value.
 */
export function encodeGrpcMessage(message: string): string {
  let out = "";
  for (const byte of new TextEncoder().encode(message)) {
    out += byte >= 0x20 && byte <= 0x7e && byte !== 0x25
      ? String.fromCharCode(byte)
      : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/**
 * Decodes a `grpc-message` value; a malformed escape is kept as it is.
 *
 * @param value The header value.
 * @returns The message.
 */
export function decodeGrpcMessage(value: string): string {
  if (!value.includes("%")) return value;
  const bytes: number[] = [];
  for (let i = 0; i < value.length; i++) {
    const hex = value.slice(i + 1, i + 3);
    if (value[i] === "%" && /^[0-9a-fA-F]{2}$/.test(hex)) {
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else {
      bytes.push(value.charCodeAt(i) & 0xff);
    }
  }
  return new TextDecoder().decode(new Uint8Array(bytes));
}

/** The metadata of a call that carries none. */
const NO_METADATA: ReadonlyMap<string, readonly (string | Uint8Array)[]> = new Map();

/** Headers that belong to HTTP/2 or gRPC itself, never to application metadata. */
const RESERVED = new Set<string>([
  ...GRPC_REQUEST_HEADERS,
  "grpc-status",
  "grpc-message",
  "grpc-status-details-bin",
]);

/**
 * The application metadata of a header list, `-bin` values decoded from base64.
 *
 * @param fields Request headers.
 * @returns Values by lower-case key, in order.
 */
export function readMetadata(
  fields: readonly HeaderField[],
): ReadonlyMap<string, readonly (string | Uint8Array)[]> {
  let out: Map<string, (string | Uint8Array)[]> | undefined;
  for (let i = 0; i < fields.length; i++) {
    const name = fields[i]![0];
    const value = fields[i]![1];
    if (name.charCodeAt(0) === 0x3a /* ":" */ || RESERVED.has(name)) continue;
    // Most calls carry none: no map is made for them.
    out ??= new Map();
    const values = out.get(name) ?? [];
    if (name.endsWith("-bin")) {
      const decoded = decodeBase64(value);
      if (decoded !== undefined) values.push(...decoded);
      else continue;
    } else {
      // One header may carry several comma-separated values only for -bin; text stays whole.
      values.push(value);
    }
    out.set(name, values);
  }
  return out ?? NO_METADATA;
}

/**
 * Header fields for application metadata.
 *
 * @param metadata Keys (lower case) and values; `-bin` keys take bytes.
 * @returns Fields to append to a request.
 */
export function metadataFields(
  metadata: Readonly<Record<string, string | Uint8Array>>,
): HeaderField[] {
  return Object.entries(metadata).map(([key, value]) => {
    if (RESERVED.has(key) || key.startsWith(":")) {
      throw new TypeError(`Cannot send metadata "${key}": the name is reserved`);
    }
    return [key, typeof value === "string" ? value : encodeBase64(value)];
  });
}

function decodeBase64(value: string): Uint8Array[] | undefined {
  // gRPC senders may leave out the padding; several values are joined by
  // commas, and each one stays a value of its own.
  const parts = value.split(",").map((p) => p.trim());
  try {
    return parts.map((p) => {
      const padded = p + "=".repeat((4 - (p.length % 4)) % 4);
      return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
    });
  } catch {
    return undefined;
  }
}

function encodeBase64(bytes: Uint8Array): string {
  let text = "";
  for (const b of bytes) text += String.fromCharCode(b);
  return btoa(text).replace(/=+$/, "");
}
