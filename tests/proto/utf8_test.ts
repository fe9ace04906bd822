// decodeUtf8 (src/proto/wire.ts): the short-ASCII path and the decoder
// must read the same text and refuse the same bytes.
import assert from "node:assert/strict";
import { decodeUtf8 } from "../../src/proto/wire.ts";

const encode = (s: string) => new TextEncoder().encode(s);

Deno.test("decodeUtf8() reads ASCII, non-ASCII and long text as the strict decoder does", () => {
  const texts = [
    "",
    "04c70f6f-22fe-4636-b447-d2902731666c",
    "a".repeat(64),
    "a".repeat(65),
    "\u0000\u007f",
    "caf\u00e9",
    "\u4e2d\u6587-name",
    "emoji \u{1f600}",
    "x".repeat(63) + "\u00e9",
  ];
  for (const text of texts) assert.equal(decodeUtf8(encode(text)), text, JSON.stringify(text));
});

Deno.test("decodeUtf8() refuses invalid UTF-8, short or long", () => {
  const bad = [
    [0xc3, 0x28],
    [0x61, 0xff],
    [0xed, 0xa0, 0x80],
    [...encode("a".repeat(70)), 0x80],
  ];
  for (const bytes of bad) assert.throws(() => decodeUtf8(new Uint8Array(bytes)), TypeError);
});
