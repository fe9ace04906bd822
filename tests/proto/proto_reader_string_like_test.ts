// ProtoReader.stringLike(): a guessed string is taken only when the bytes
// spell it in ASCII; anything else reads as string() does.
import assert from "node:assert/strict";
import { ProtoReader } from "../../src/proto/proto_reader.ts";

/** A length-delimited value (length < 128) followed by one more byte. */
function value(bytes: number[]): Uint8Array {
  return new Uint8Array([bytes.length, ...bytes, 0x2a]);
}

function readBoth(bytes: Uint8Array, known: string | undefined): [string, string, number] {
  const guessed = new ProtoReader(bytes);
  const text = guessed.stringLike(known);
  const plain = new ProtoReader(bytes).string();
  return [text, plain, guessed.pos];
}

Deno.test("stringLike() reads what string() reads, whatever the guess", () => {
  const id = "0123456789abcdef".repeat(4);
  const ascii = value([...id].map((c) => c.charCodeAt(0)));
  const cases: [Uint8Array, string | undefined][] = [
    [ascii, id],
    [ascii, undefined],
    [ascii, id.slice(0, -1) + "0"], // same length, last byte differs
    [ascii, id.slice(1)], // shorter
    [value([]), ""],
    [value([]), "x"],
    // A lone 0xE9 is not UTF-8: U+FFFD, never the guessed "é" (U+00E9).
    [value([0xe9]), "\u00e9"],
    // "é" in UTF-8 is two bytes; a guess of the two Latin-1 characters is refused too.
    [value([0xc3, 0xa9]), "\u00c3\u00a9"],
    [value([0xc3, 0xa9]), "\u00e9"],
  ];
  for (const [bytes, known] of cases) {
    const [text, plain, pos] = readBoth(bytes, known);
    assert.equal(text, plain, `guess ${JSON.stringify(known)}`);
    assert.equal(pos, bytes.length - 1, "the cursor is past the value");
  }
});

Deno.test("stringLike() refuses a value longer than what is left, guessed or not", () => {
  const truncated = new Uint8Array([5, 0x61, 0x62]);
  for (const known of [undefined, "ab", "abcde"]) {
    assert.throws(() => new ProtoReader(truncated).stringLike(known), RangeError);
  }
});
