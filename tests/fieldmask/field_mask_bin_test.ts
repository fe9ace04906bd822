import assert from "node:assert/strict";
import { decodeFieldMaskBinary, encodeFieldMaskBinary } from "../../src/proto/field_mask_bin.ts";

const TEXT = new TextEncoder();

/** A length-delimited field. */
function ld(field: number, payload: Uint8Array | number[]): number[] {
  const bytes = [...payload];
  return [...varint(field * 8 + 2), ...varint(bytes.length), ...bytes];
}

function varint(value: number): number[] {
  const out: number[] = [];
  while (value >= 0x80) {
    out.push((value % 128) | 0x80);
    value = Math.floor(value / 128);
  }
  out.push(value);
  return out;
}

function str(value: string): number[] {
  return [...TEXT.encode(value)];
}

Deno.test("encodeFieldMaskBinary() writes repeated field 1", async (t) => {
  const cases: { name: string; paths: string[]; bytes: number[] }[] = [
    { name: "no paths", paths: [], bytes: [] },
    { name: "one path", paths: ["ab"], bytes: [0x0a, 2, 0x61, 0x62] },
    { name: "an empty path", paths: [""], bytes: [0x0a, 0] },
    { name: "two paths", paths: ["a", "b"], bytes: [0x0a, 1, 0x61, 0x0a, 1, 0x62] },
    {
      name: "a 200-byte path",
      paths: ["x".repeat(200)],
      bytes: [0x0a, 0xc8, 0x01, ...str("x".repeat(200))],
    },
    { name: "non-ASCII", paths: ["é"], bytes: [0x0a, 2, 0xc3, 0xa9] },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      assert.deepEqual([...encodeFieldMaskBinary(c.paths)], c.bytes);
    });
  }
});

Deno.test("encodeFieldMaskBinary() rejects lone surrogates", () => {
  assert.throws(() => encodeFieldMaskBinary(["status.\ud800"]), {
    name: "TypeError",
    message: /not well-formed/,
  });
});

Deno.test("decodeFieldMaskBinary() reads what encodeFieldMaskBinary() writes", async (t) => {
  const cases: { name: string; paths: string[] }[] = [
    { name: "nothing", paths: [] },
    { name: "camelCase paths", paths: ["metadata.name", "status.podIPs", "spec.containers.name"] },
    { name: "empty and odd paths", paths: ["", " ", "a,b", "\u0000"] },
    { name: "unicode", paths: ["ünïcødé ✓ 😀", "\ufeffBOM"] },
    { name: "a 70 000-byte path", paths: ["y".repeat(70_000)] },
    { name: "10 000 paths", paths: Array.from({ length: 10_000 }, (_, i) => `p${i}`) },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      assert.deepEqual(decodeFieldMaskBinary(encodeFieldMaskBinary(c.paths)), c.paths);
    });
  }
});

Deno.test("decodeFieldMaskBinary() skips unknown fields of every wire type", async (t) => {
  const cases: { name: string; bytes: number[]; paths: string[] }[] = [
    { name: "varint", bytes: [0x10, 0x96, 0x01, ...ld(1, str("a"))], paths: ["a"] },
    {
      name: "10-byte varint",
      bytes: [0x10, ...Array(9).fill(0xff), 0x01, ...ld(1, str("a"))],
      paths: ["a"],
    },
    {
      name: "fixed64",
      bytes: [...ld(1, str("a")), 0x19, 1, 2, 3, 4, 5, 6, 7, 8, ...ld(1, str("b"))],
      paths: ["a", "b"],
    },
    { name: "length-delimited", bytes: [...ld(2, str("x.y")), ...ld(1, str("a"))], paths: ["a"] },
    { name: "fixed32", bytes: [0x1d, 1, 2, 3, 4, ...ld(1, str("a"))], paths: ["a"] },
    {
      name: "a group, with a paths-numbered field inside",
      bytes: [0x23, ...ld(1, str("hidden")), 0x08, 5, 0x2b, 0x2c, 0x24, ...ld(1, str("a"))],
      paths: ["a"],
    },
    {
      name: "a large field number",
      bytes: [...varint(0x1fffffff * 8), 0, ...ld(1, str("a"))],
      paths: ["a"],
    },
    { name: "a non-minimal tag", bytes: [0x8a, 0x80, 0x00, 1, 0x61], paths: ["a"] },
    { name: "only unknown fields", bytes: [0x10, 1], paths: [] },
    { name: "a BOM is kept", bytes: ld(1, [0xef, 0xbb, 0xbf, 0x61]), paths: ["\ufeffa"] },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      assert.deepEqual(decodeFieldMaskBinary(new Uint8Array(c.bytes)), c.paths);
    });
  }
});

Deno.test("decodeFieldMaskBinary() rejects malformed input with a TypeError", async (t) => {
  const cases: { name: string; bytes: number[]; message: RegExp }[] = [
    { name: "tag without length", bytes: [0x0a], message: /truncated varint at offset 1/ },
    { name: "truncated tag", bytes: [0x8a], message: /truncated varint at offset 0/ },
    {
      name: "path past the end",
      bytes: [0x0a, 5, 0x61],
      message: /length 5 at offset 1 runs past the end/,
    },
    {
      name: "huge length",
      bytes: [0x0a, ...Array(9).fill(0xff), 0x01],
      message: /runs past the end/,
    },
    {
      name: "varint of 11 bytes",
      bytes: [0x10, ...Array(10).fill(0x80), 0x00],
      message: /longer than 10 bytes/,
    },
    { name: "field number 0", bytes: [0x02, 0], message: /invalid field number "0"/ },
    {
      name: "field number too large",
      bytes: [...varint(0x20000000 * 8 + 2), 0],
      message: /invalid field number/,
    },
    { name: "wire type 6", bytes: [0x0e], message: /invalid wire type "6"/ },
    { name: "wire type 7", bytes: [0x17], message: /invalid wire type "7"/ },
    { name: "paths as a varint", bytes: [0x08, 1], message: /field "paths" has wire type "0"/ },
    {
      name: "paths as fixed32",
      bytes: [0x0d, 1, 2, 3, 4],
      message: /field "paths" has wire type "5"/,
    },
    { name: "truncated fixed64", bytes: [0x19, 1, 2, 3], message: /truncated fixed-size field/ },
    { name: "truncated fixed32", bytes: [0x1d, 1], message: /truncated fixed-size field/ },
    { name: "unterminated group", bytes: [0x13, 0x10, 1], message: /group "2" not ended/ },
    { name: "end group without start", bytes: [0x14], message: /unmatched end of group/ },
    { name: "mismatched end group", bytes: [0x13, 0x1c], message: /unmatched end of group/ },
    {
      name: "groups nested too deep",
      bytes: Array(101).fill(0x13),
      message: /nested deeper than 100/,
    },
    {
      name: "invalid UTF-8 byte",
      bytes: ld(1, [0xff]),
      message: /path at offset 1 is not valid UTF-8/,
    },
    { name: "overlong encoding", bytes: ld(1, [0xc0, 0x80]), message: /not valid UTF-8/ },
    { name: "encoded surrogate", bytes: ld(1, [0xed, 0xa0, 0x80]), message: /not valid UTF-8/ },
    { name: "truncated sequence", bytes: ld(1, [0x61, 0xe2, 0x82]), message: /not valid UTF-8/ },
    {
      name: "bad UTF-8 after a good path",
      bytes: [...ld(1, str("ok")), ...ld(1, [0x80])],
      message: /offset 5/,
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      assert.throws(() => decodeFieldMaskBinary(new Uint8Array(c.bytes)), (err: unknown) => {
        assert.ok(err instanceof TypeError, `expected TypeError, got ${err}`);
        assert.match(err.message, c.message);
        assert.match(err.message, /^Cannot decode field mask: /);
        return true;
      });
    });
  }
});

Deno.test("decodeFieldMaskBinary() handles a 1 MiB blob", () => {
  const paths = Array.from({ length: 16 }, (_, i) => String.fromCharCode(97 + i).repeat(65_536));
  const bytes = encodeFieldMaskBinary(paths);
  assert.ok(bytes.length > 1 << 20);
  assert.deepEqual(decodeFieldMaskBinary(bytes), paths);
  assert.throws(() => decodeFieldMaskBinary(bytes.subarray(0, bytes.length - 1)), TypeError);
});
