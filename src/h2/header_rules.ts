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
  const seen = new Set<string>();
  let regularSeen = false;
  for (const [name, value] of fields) {
    // RFC 9113 section 8.2.1 forbids these in every field value, pseudo-headers included.
    if (/[\r\n\0]/.test(value)) return `field "${name}" has a forbidden character in its value`;
    if (name.startsWith(":")) {
      if (allowedPseudo === undefined || !allowedPseudo.has(name)) {
        return `pseudo-header "${name}" is not allowed in ${kind}`;
      }
      if (regularSeen) return `pseudo-header "${name}" follows a regular field`;
      if (seen.has(name)) return `pseudo-header "${name}" appears twice`;
      seen.add(name);
      if (value === "" && name === ":path") return `pseudo-header ":path" is empty`;
      continue;
    }
    regularSeen = true;
    if (!FIELD_NAME.test(name)) {
      return `field name ${JSON.stringify(name)} is not a lower-case token`;
    }
    if (CONNECTION_SPECIFIC.has(name)) return `connection-specific field "${name}"`;
    if (name === "te" && value !== "trailers") {
      return `field "te" with a value other than "trailers"`;
    }
  }
  if (kind === "request") {
    for (const required of [":method", ":scheme", ":path"]) {
      if (!seen.has(required)) return `pseudo-header "${required}" is missing`;
    }
  }
  if (kind === "response" && !seen.has(":status")) return `pseudo-header ":status" is missing`;
  return undefined;
}

/**
 * @param fields A header list.
 * @param name A lower-case field name.
 * @returns The first value of `name`, if any.
 */
export function headerValue(fields: readonly HeaderField[], name: string): string | undefined {
  for (const [n, v] of fields) if (n === name) return v;
  return undefined;
}
