import assert from "node:assert/strict";
import { HpackError } from "../../src/h2/hpack.ts";
import {
  huffmanDecode,
  huffmanDecodeInto,
  huffmanEncode,
  huffmanEncodedLength,
  huffmanEncodeInto,
  huffmanMaxDecodedLength,
} from "../../src/h2/huffman.ts";
import { Prng } from "../_support/prng.ts";

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function fromHex(text: string): Uint8Array {
  return Uint8Array.from(text.match(/../g) ?? [], (pair) => parseInt(pair, 16));
}

function latin1(text: string): Uint8Array {
  return Uint8Array.from(text, (c) => c.charCodeAt(0));
}

/** One symbol's code, left-aligned and padded with ones to whole octets. */
function paddedCode(code: number, bits: number): Uint8Array {
  const octets = Math.ceil(bits / 8);
  const padding = octets * 8 - bits;
  let value = BigInt(code) << BigInt(padding) | ((1n << BigInt(padding)) - 1n);
  const out = new Uint8Array(octets);
  for (let i = octets - 1; i >= 0; i--) {
    out[i] = Number(value & 0xffn);
    value >>= 8n;
  }
  return out;
}

Deno.test("huffmanEncode() codes single symbols as RFC 7541 Appendix B lists them", async (t) => {
  // Rows of the RFC's table: symbol, code as hex, length in bits.
  const cases: { symbol: number; code: number; bits: number }[] = [
    { symbol: 0, code: 0x1ff8, bits: 13 },
    { symbol: 1, code: 0x7fffd8, bits: 23 },
    { symbol: 10, code: 0x3ffffffc, bits: 30 },
    { symbol: 32, code: 0x14, bits: 6 },
    { symbol: 48, code: 0x0, bits: 5 },
    { symbol: 65, code: 0x21, bits: 6 },
    { symbol: 97, code: 0x3, bits: 5 },
    { symbol: 101, code: 0x5, bits: 5 },
    { symbol: 126, code: 0x1ffd, bits: 13 },
    { symbol: 127, code: 0xffffffc, bits: 28 },
    { symbol: 255, code: 0x3ffffee, bits: 26 },
  ];
  for (const c of cases) {
    await t.step(`symbol ${c.symbol} is ${c.code.toString(16)} in ${c.bits} bits`, () => {
      const coded = huffmanEncode(new Uint8Array([c.symbol]));
      assert.equal(hex(coded), hex(paddedCode(c.code, c.bits)));
      assert.deepEqual(huffmanDecode(coded), new Uint8Array([c.symbol]));
    });
  }
});

Deno.test("huffmanEncode() and huffmanDecode() match the RFC 7541 C.4 and C.6 strings", async (t) => {
  const cases: { text: string; coded: string }[] = [
    { text: "www.example.com", coded: "f1e3c2e5f23a6ba0ab90f4ff" },
    { text: "no-cache", coded: "a8eb10649cbf" },
    { text: "custom-key", coded: "25a849e95ba97d7f" },
    { text: "custom-value", coded: "25a849e95bb8e8b4bf" },
    { text: "302", coded: "6402" },
    { text: "307", coded: "640eff" },
    { text: "private", coded: "aec3771a4b" },
    {
      text: "Mon, 21 Oct 2013 20:13:21 GMT",
      coded: "d07abe941054d444a8200595040b8166e082a62d1bff",
    },
    {
      text: "Mon, 21 Oct 2013 20:13:22 GMT",
      coded: "d07abe941054d444a8200595040b8166e084a62d1bff",
    },
    { text: "https://www.example.com", coded: "9d29ad171863c78f0b97c8e9ae82ae43d3" },
    { text: "gzip", coded: "9bd9ab" },
    {
      text: "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
      coded:
        "94e7821dd7f2e6c7b335dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007",
    },
    { text: "", coded: "" },
  ];
  for (const c of cases) {
    await t.step(JSON.stringify(c.text), () => {
      const bytes = latin1(c.text);
      assert.equal(hex(huffmanEncode(bytes)), c.coded);
      assert.equal(huffmanEncodedLength(bytes), c.coded.length / 2);
      assert.deepEqual(huffmanDecode(fromHex(c.coded)), bytes);
    });
  }
});

Deno.test("huffmanDecode() round-trips every octet and random strings", () => {
  const every = Uint8Array.from({ length: 256 }, (_, i) => i);
  assert.deepEqual(huffmanDecode(huffmanEncode(every)), every);
  const rng = new Prng(7541);
  for (let i = 0; i < 2000; i++) {
    const bytes = rng.bytes(rng.int(100));
    const coded = huffmanEncode(bytes);
    assert.equal(coded.length, huffmanEncodedLength(bytes));
    assert.deepEqual(huffmanDecode(coded), bytes);
  }
});

Deno.test("huffmanDecode() rejects EOS, long padding and padding that is not all ones", async (t) => {
  // "a" is 00011 (5 bits); "0" is 00000.
  const cases: { name: string; coded: string; message: RegExp }[] = [
    { name: "EOS alone (30 ones, then 2 of padding)", coded: "ffffffff", message: /EOS/ },
    { name: "EOS after a symbol", coded: "1fffffffff", message: /EOS/ },
    { name: "a whole octet of padding", coded: "ff", message: /longer than "7" bits/ },
    { name: "an extra padding octet after a symbol", coded: "1fff", message: /longer/ },
    { name: "16 one bits, short of EOS", coded: "ffff", message: /longer/ },
    { name: "zero padding", coded: "18", message: /not all ones/ },
    { name: "padding ending in a zero", coded: "1e", message: /not all ones/ },
    { name: "a code cut short", coded: "fe", message: /not all ones/ },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      assert.throws(() => huffmanDecode(fromHex(c.coded)), (err: unknown) => {
        assert.ok(err instanceof HpackError, String(err));
        assert.match(err.message, c.message);
        return true;
      });
    });
  }
});

Deno.test("huffmanDecode() accepts only what huffmanEncode() would produce (fuzz)", () => {
  // A successful decode has codes plus under 8 one bits of padding, which is
  // exactly what encoding the result gives back.
  const rng = new Prng(0x2b);
  let decoded = 0;
  for (let i = 0; i < 20_000; i++) {
    const bytes = rng.int(4) === 0
      ? Uint8Array.from({ length: 1 + rng.int(8) }, () => 0xf0 | rng.int(16))
      : rng.bytes(rng.int(24));
    let out: Uint8Array;
    try {
      out = huffmanDecode(bytes);
    } catch (err) {
      assert.ok(err instanceof HpackError, `${hex(bytes)}: ${err}`);
      continue;
    }
    decoded++;
    assert.equal(hex(huffmanEncode(out)), hex(bytes));
  }
  assert.ok(decoded > 1000, `only ${decoded} inputs decoded`);
});

Deno.test("huffmanDecodeInto() fits the worst case in huffmanMaxDecodedLength() octets", () => {
  // "0" has the shortest code (5 bits): 8 of them fill 5 octets exactly.
  const coded = huffmanEncode(latin1("00000000"));
  assert.equal(coded.length, 5);
  assert.equal(huffmanMaxDecodedLength(5), 8);
  const target = new Uint8Array(8);
  assert.equal(huffmanDecodeInto(coded, target), 8);
  assert.deepEqual(target, latin1("00000000"));
  assert.throws(() => huffmanDecodeInto(coded, new Uint8Array(7)), RangeError);
});

Deno.test("huffmanDecodeInto() decodes a range of its input", async (t) => {
  // "no-cache" (RFC 7541 C.4.2) between two stray octets.
  const bytes = fromHex("00" + "a8eb10649cbf" + "00");
  const target = new Uint8Array(16);
  assert.equal(huffmanDecodeInto(bytes, target, { start: 1, end: 7 }), 8);
  assert.deepEqual(target.subarray(0, 8), latin1("no-cache"));
  assert.equal(huffmanDecodeInto(bytes, target, { start: 3, end: 3 }), 0);
  const outside = [{ start: -1, end: 2 }, { start: 3, end: 2 }, { start: 0, end: 9 }];
  for (const range of outside) {
    await t.step(JSON.stringify(range), () => {
      assert.throws(() => huffmanDecodeInto(bytes, target, range), RangeError);
    });
  }
});

Deno.test("huffmanEncodeInto() writes at an offset and rejects a short target", () => {
  const bytes = latin1("www.example.com");
  const target = new Uint8Array(14).fill(0xaa);
  assert.equal(huffmanEncodeInto(bytes, target, { offset: 1 }), 13);
  assert.equal(hex(target), "aaf1e3c2e5f23a6ba0ab90f4ffaa");
  assert.throws(() => huffmanEncodeInto(bytes, new Uint8Array(12), { offset: 1 }), RangeError);
  assert.throws(() => huffmanEncodeInto(bytes, new Uint8Array(11)), RangeError);
});
