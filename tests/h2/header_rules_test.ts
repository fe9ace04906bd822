import assert from "node:assert/strict";
import { checkHeaderList, type HeaderListKind, headerValue } from "../../src/h2/header_rules.ts";
import type { HeaderField } from "../../src/h2/hpack.ts";

const REQUEST: HeaderField[] = [
  [":method", "POST"],
  [":scheme", "http"],
  [":path", "/pkg.Svc/Method"],
  [":authority", "localhost"],
  ["content-type", "application/grpc"],
  ["te", "trailers"],
];
const RESPONSE: HeaderField[] = [[":status", "200"], ["content-type", "application/grpc"]];
const TRAILERS: HeaderField[] = [["grpc-status", "0"], ["grpc-message", ""]];

interface Case {
  name: string;
  kind: HeaderListKind;
  fields: HeaderField[];
  /** A piece of the expected complaint, or undefined when the list is fine. */
  problem: string | undefined;
}

Deno.test("checkHeaderList() accepts well-formed lists", async (t) => {
  const cases: Case[] = [
    { name: "gRPC request", kind: "request", fields: REQUEST, problem: undefined },
    {
      name: "request without :authority",
      kind: "request",
      fields: REQUEST.filter(([n]) => n !== ":authority"),
      problem: undefined,
    },
    { name: "response", kind: "response", fields: RESPONSE, problem: undefined },
    { name: "trailers", kind: "trailers", fields: TRAILERS, problem: undefined },
    { name: "empty trailers", kind: "trailers", fields: [], problem: undefined },
    {
      name: "token characters in a name",
      kind: "trailers",
      fields: [["x-a!#$%&'*+-.^_`|~09", "v"]],
      problem: undefined,
    },
    { name: "empty value", kind: "trailers", fields: [["x-empty", ""]], problem: undefined },
    {
      name: "repeated regular field",
      kind: "trailers",
      fields: [["a", "1"], ["a", "2"]],
      problem: undefined,
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => assert.equal(checkHeaderList(c.fields, c.kind), c.problem));
  }
});

Deno.test("checkHeaderList() refuses each kind of malformed list", async (t) => {
  const cases: Case[] = [
    // Pseudo-header fields (RFC 9113 section 8.3).
    {
      name: "response pseudo-header in a request",
      kind: "request",
      fields: [[":status", "200"], ...REQUEST],
      problem: `pseudo-header ":status" is not allowed in request`,
    },
    {
      name: "request pseudo-header in a response",
      kind: "response",
      fields: [[":status", "200"], [":path", "/"]],
      problem: `pseudo-header ":path" is not allowed in response`,
    },
    {
      name: "pseudo-header in trailers",
      kind: "trailers",
      fields: [[":status", "200"]],
      problem: `pseudo-header ":status" is not allowed in trailers`,
    },
    {
      name: "unknown pseudo-header",
      kind: "request",
      fields: [[":protocol", "websocket"], ...REQUEST],
      problem: `pseudo-header ":protocol" is not allowed in request`,
    },
    {
      name: "pseudo-header after a regular field",
      kind: "request",
      fields: [[":method", "POST"], [":scheme", "http"], ["te", "trailers"], [":path", "/"]],
      problem: `pseudo-header ":path" follows a regular field`,
    },
    {
      name: "pseudo-header twice",
      kind: "request",
      fields: [[":method", "POST"], ...REQUEST],
      problem: `pseudo-header ":method" appears twice`,
    },
    {
      name: ":status twice",
      kind: "response",
      fields: [[":status", "200"], [":status", "204"]],
      problem: `pseudo-header ":status" appears twice`,
    },
    {
      name: "empty :path",
      kind: "request",
      fields: [[":method", "GET"], [":scheme", "http"], [":path", ""]],
      problem: `pseudo-header ":path" is empty`,
    },
    {
      name: "missing :method",
      kind: "request",
      fields: REQUEST.filter(([n]) => n !== ":method"),
      problem: `pseudo-header ":method" is missing`,
    },
    {
      name: "missing :scheme",
      kind: "request",
      fields: REQUEST.filter(([n]) => n !== ":scheme"),
      problem: `pseudo-header ":scheme" is missing`,
    },
    {
      name: "missing :path",
      kind: "request",
      fields: REQUEST.filter(([n]) => n !== ":path"),
      problem: `pseudo-header ":path" is missing`,
    },
    {
      name: "missing :status",
      kind: "response",
      fields: [["content-type", "application/grpc"]],
      problem: `pseudo-header ":status" is missing`,
    },
    // Field names (RFC 9113 section 8.2.1).
    {
      name: "upper-case name",
      kind: "trailers",
      fields: [["Grpc-Status", "0"]],
      problem: `field name "Grpc-Status" is not a lower-case token`,
    },
    {
      name: "name with a space",
      kind: "trailers",
      fields: [["x y", "0"]],
      problem: `field name "x y" is not a lower-case token`,
    },
    {
      name: "name with a colon inside",
      kind: "trailers",
      fields: [["x:y", "0"]],
      problem: `field name "x:y" is not a lower-case token`,
    },
    {
      name: "empty name",
      kind: "trailers",
      fields: [["", "0"]],
      problem: `field name "" is not a lower-case token`,
    },
    {
      name: "name with a non-ASCII character",
      kind: "trailers",
      fields: [["x-\u00e9", "0"]],
      problem: `field name "x-\u00e9" is not a lower-case token`,
    },
    // Connection-specific fields (RFC 9113 section 8.2.2).
    ...["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"].map((
      name,
    ): Case => ({
      name: `connection-specific "${name}"`,
      kind: "request",
      fields: [...REQUEST, [name, "x"]],
      problem: `connection-specific field "${name}"`,
    })),
    {
      name: "te other than trailers",
      kind: "request",
      fields: [...REQUEST.filter(([n]) => n !== "te"), ["te", "gzip"]],
      problem: `field "te" with a value other than "trailers"`,
    },
    // Field values (RFC 9113 section 8.2.1).
    ...[["CR", "\r"], ["LF", "\n"], ["NUL", "\0"]].map(([what, ch]): Case => ({
      name: `${what} in a value`,
      kind: "trailers",
      fields: [["x-a", `one${ch}two`]],
      problem: `field "x-a" has a forbidden character in its value`,
    })),
    ...[["CR", "\r"], ["LF", "\n"], ["NUL", "\0"]].map(([what, ch]): Case => ({
      name: `${what} at either end of a value`,
      kind: "trailers",
      fields: [["x-a", "fine"], ["x-b", `${ch}x`], ["x-c", `x${ch}`]],
      problem: `field "x-b" has a forbidden character in its value`,
    })),
    {
      name: "other control characters and non-ASCII are not forbidden",
      kind: "trailers",
      fields: [["x-a", "tab\there, bell\u0007, \u00e9\u4e2d"]],
      problem: undefined,
    },
    ...[["CR", "\r"], ["LF", "\n"], ["NUL", "\0"]].map(([what, ch]): Case => ({
      name: `${what} in a pseudo-header value`,
      kind: "request",
      fields: [[":method", "POST"], [":scheme", "http"], [":path", `/a${ch}b`]],
      problem: `field ":path" has a forbidden character in its value`,
    })),
  ];
  for (const c of cases) {
    await t.step(c.name, () => assert.equal(checkHeaderList(c.fields, c.kind), c.problem));
  }
});

Deno.test("headerValue() returns the first value of a name, or undefined", () => {
  const fields: HeaderField[] = [["a", "1"], ["b", "2"], ["a", "3"]];
  assert.equal(headerValue(fields, "a"), "1");
  assert.equal(headerValue(fields, "b"), "2");
  assert.equal(headerValue(fields, "c"), undefined);
  assert.equal(headerValue([], "a"), undefined);
});
