/**
 * The HTTP semantics checks RFC 9113 section 8 puts on a header list:
 * pseudo-header fields, lower-case names, no connection-specific fields.
 * A list that fails is malformed: a stream error PROTOCOL_ERROR.
 *
 * @module
 */

import type { HeaderField } from "./hpack.ts";

/** Which header list of a message is being checked. */
export type HeaderListKind = "request" | "response" | "trailers";

const REQUEST_PSEUDO = new Set([":method", ":scheme", ":path", ":authority"]);
const RESPONSE_PSEUDO = new Set([":status"]);
const CONNECTION_SPECIFIC = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "upgrade",
]);
/** RFC 9110 token characters, lower case only. */
const FIELD_NAME = /^[!#$%&'*+\-.^_`|~0-9a-z]+$/;
const PSEUDO_BIT: Readonly<Record<string, number>> = {
  ":method": 1,
  ":scheme": 2,
  ":path": 4,
  ":authority": 8,
  ":status": 16,
};
const REQUIRED_IN_REQUEST = [":method", ":scheme", ":path"] as const;
const REQUIRED_IN_REQUEST_BITS = REQUIRED_IN_REQUEST.reduce(
  (bits, name) => bits | PSEUDO_BIT[name]!,
  0,
);
/**
 * The headers of HTTP/2 and gRPC themselves that a gRPC request carries
 * (never application metadata): the one list of them.
 */
export const GRPC_REQUEST_HEADERS = [
  "content-type",
  "te",
  "user-agent",
  "grpc-timeout",
  "grpc-encoding",
  "grpc-accept-encoding",
] as const;
/** Names every gRPC call carries, known to be tokens: the pattern is not run on them. */
const KNOWN_GOOD_NAMES = new Set<string>([...GRPC_REQUEST_HEADERS, "content-length"]);

/**
 * Whether a field value holds CR, LF or NUL, which RFC 9113 section 8.2.1
 * forbids in every field value, pseudo-headers included. A loop: values are
 * short, and a regular expression's call costs more than reading them.
 */
function hasForbiddenChar(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c === 0x0d || c === 0x0a || c === 0) return true;
  }
  return false;
}

/**
 * Checks a header list.
 *
 * @param fields The decoded fields, in order.
 * @param kind Request headers, response headers, or trailers.
 * @returns Why the list is malformed, or `undefined` when it is fine.
 */
export function checkHeaderList(
  fields: readonly HeaderField[],
  kind: HeaderListKind,
): string | undefined {
  const allowedPseudo = kind === "request"
    ? REQUEST_PSEUDO
    : kind === "response"
    ? RESPONSE_PSEUDO
    : undefined;
  // Pseudo-headers seen, one bit each (PSEUDO_BIT): no set per header list.
  let seen = 0;
  let regularSeen = false;
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i]!;
    const name = field[0];
    const value = field[1];
    if (hasForbiddenChar(value)) {
      return `field "${name}" has a forbidden character in its value`;
    }
    if (name.charCodeAt(0) === 0x3a /* ":" */) {
      if (allowedPseudo === undefined || !allowedPseudo.has(name)) {
        return `pseudo-header "${name}" is not allowed in ${kind}`;
      }
      if (regularSeen) return `pseudo-header "${name}" follows a regular field`;
      const bit = PSEUDO_BIT[name]!;
      if ((seen & bit) !== 0) return `pseudo-header "${name}" appears twice`;
      seen |= bit;
      if (value === "" && name === ":path") return `pseudo-header ":path" is empty`;
      continue;
    }
    regularSeen = true;
    if (!KNOWN_GOOD_NAMES.has(name)) {
      if (!FIELD_NAME.test(name)) {
        return `field name ${JSON.stringify(name)} is not a lower-case token`;
      }
    }
    if (CONNECTION_SPECIFIC.has(name)) return `connection-specific field "${name}"`;
    if (name === "te" && value !== "trailers") {
      return `field "te" with a value other than "trailers"`;
    }
  }
  if (kind === "request" && (seen & REQUIRED_IN_REQUEST_BITS) !== REQUIRED_IN_REQUEST_BITS) {
    const missing = REQUIRED_IN_REQUEST.find((name) => (seen & PSEUDO_BIT[name]!) === 0);
    return `pseudo-header "${missing}" is missing`;
  }
  if (kind === "response" && (seen & PSEUDO_BIT[":status"]!) === 0) {
    return `pseudo-header ":status" is missing`;
  }
  return undefined;
}

/**
 * @param fields A header list.
 * @param name A lower-case field name.
 * @returns The first value of `name`, if any.
 */
export function headerValue(fields: readonly HeaderField[], name: string): string | undefined {
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i]!;
    if (field[0] === name) return field[1];
  }
  return undefined;
}
