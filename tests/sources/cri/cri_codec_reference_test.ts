/**
 * The CRI codec against protobufjs as an independent reference: for every
 * message type of the CRI schema, seeded random messages (maps, repeated and
 * nested fields, enums in and out of range, int64 extremes, unicode, lone
 * surrogates) encode to the same bytes and decode to the same plain objects
 * as protobufjs's `fromObject` + `encode` and `decode` + `toObject` (longs and
 * enums as numbers, defaults, arrays, objects) did before; invalid UTF-8,
 * unknown fields and fields of the wrong wire type decode alike; truncated
 * and corrupted bytes throw an Error, never crash and never decode
 * differently.
 */

import assert from "node:assert/strict";
import protobuf from "protobufjs";
import { criMessageCodec } from "../../../src/sources/cri/cri_codec.ts";
import { CRI_DESCRIPTOR } from "../../../src/sources/cri/generated/cri_descriptor.ts";
import { Prng } from "../../_support/prng.ts";

const TO_OBJECT: protobuf.IConversionOptions = {
  longs: Number,
  enums: Number,
  defaults: true,
  arrays: true,
  objects: true,
};

const ROOT = protobuf.Root.fromJSON(CRI_DESCRIPTOR as unknown as protobuf.INamespace);
ROOT.resolveAll();
const PACKAGE = ROOT.lookup("runtime.v1");
if (!(PACKAGE instanceof protobuf.Namespace)) throw new Error("no runtime.v1 in the descriptor");
const TYPES = PACKAGE.nestedArray.filter((n): n is protobuf.Type => n instanceof protobuf.Type);

function reference(name: string): protobuf.Type {
  return ROOT.lookupType(`runtime.v1.${name}`);
}

function refEncode(type: protobuf.Type, value: Record<string, unknown>): Uint8Array {
  return Uint8Array.from(type.encode(type.fromObject(value)).finish());
}

function refDecode(type: protobuf.Type, bytes: Uint8Array): unknown {
  return type.toObject(type.decode(bytes), TO_OBJECT);
}

const STRINGS = [
  "",
  "a",
  "web-0",
  "twelve-chars",
  "0f8e6a2c-1d4b-4c6e-9a7f-3b2d1e0c9a8b",
  "grüße/日本語/🚀",
  "\ufeffbom first",
  "lone \ud800 surrogate",
  "trail \udc00",
  "x".repeat(200),
  "nul\u0000inside",
];

const INT64S = [
  0,
  1,
  -1,
  127,
  128,
  2 ** 31,
  -(2 ** 31),
  2 ** 32,
  1_700_000_000_123_456_000,
  Number.MAX_SAFE_INTEGER,
  -Number.MAX_SAFE_INTEGER,
  2 ** 62,
  -(2 ** 62),
  2 ** 63,
  -(2 ** 63),
  1e20,
  -1e20,
  1.5,
  -2.5,
];

const INT32S = [0, 1, -1, 2 ** 31 - 1, -(2 ** 31), 300, -300];

function randomScalar(prng: Prng, type: string): unknown {
  switch (type) {
    case "string":
      return prng.int(4) === 0 ? prng.pick(STRINGS) : `s${prng.int(1_000_000)}`;
    case "bool":
      return prng.int(2) === 0;
    case "int64":
      return prng.int(3) === 0 ? prng.pick(INT64S) : prng.int(2 ** 31) * 1000 - 2 ** 30;
    case "int32":
      return prng.pick(INT32S);
    case "uint32":
      return prng.pick([0, 1, 7, 2 ** 31, 2 ** 32 - 1]);
    default:
      throw new Error(`no generator for ${type}`);
  }
}

function randomEnum(prng: Prng, type: protobuf.Enum): number {
  const known = Object.values(type.values);
  return prng.int(5) === 0 ? prng.pick([7, 42, -1]) : prng.pick(known);
}

function randomMessage(prng: Prng, type: protobuf.Type, depth: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of type.fieldsArray) {
    if (prng.int(4) === 0) continue;
    const resolved = field.resolve().resolvedType;
    const one = (): unknown => {
      if (resolved instanceof protobuf.Type) {
        return depth > 4 ? {} : randomMessage(prng, resolved, depth + 1);
      }
      if (resolved instanceof protobuf.Enum) return randomEnum(prng, resolved);
      return randomScalar(prng, field.type);
    };
    if (field.map) {
      const map: Record<string, unknown> = {};
      const n = prng.int(4);
      for (let i = 0; i < n; i++) map[prng.pick(STRINGS)] = one();
      if (prng.int(20) === 0) {
        Object.defineProperty(map, "__proto__", {
          value: one(),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      out[field.name] = map;
    } else if (field.repeated) {
      const n = prng.int(4);
      out[field.name] = Array.from({ length: n }, one);
    } else {
      out[field.name] = one();
    }
  }
  return out;
}

/**
 * An unknown field (number 900 and up, every wire type the reader must skip).
 * protobufjs 8 cannot skip a group in a message type without fields (it
 * compares the end tag with the whole start tag): no groups there.
 */
function unknownField(prng: Prng, groups: boolean): number[] {
  const id = 900 + prng.int(100);
  switch (prng.int(groups ? 5 : 4)) {
    case 0:
      return [...varint((id << 3) | 0), 0xff, 0xff, 0x03];
    case 1:
      return [...varint((id << 3) | 1), 1, 2, 3, 4, 5, 6, 7, 8];
    case 2:
      return [...varint((id << 3) | 2), 3, 0x61, 0x62, 0x63];
    case 3:
      return [...varint((id << 3) | 5), 1, 2, 3, 4];
    default:
      // A group holding a varint, ended by its end tag.
      return [...varint((id << 3) | 3), 0x08, 0x01, ...varint((id << 3) | 4)];
  }
}

function varint(n: number): number[] {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return out;
}

function decodeBoth(type: protobuf.Type, bytes: Uint8Array): void {
  const ours = criMessageCodec<unknown>(type.name);
  let expected: unknown;
  let refError: unknown;
  try {
    expected = refDecode(type, bytes);
  } catch (error) {
    refError = error;
  }
  let actual: unknown;
  let ourError: unknown;
  try {
    actual = ours.decode(bytes);
  } catch (error) {
    ourError = error;
  }
  if (refError !== undefined || ourError !== undefined) {
    assert.ok(ourError instanceof Error, `ours decoded what protobufjs rejected: ${refError}`);
    assert.ok(refError instanceof Error, `ours rejected what protobufjs decoded: ${ourError}`);
    return;
  }
  assert.deepStrictEqual(actual, expected);
}

Deno.test("CRI codec: the corpus covers every message type of the schema", () => {
  assert.ok(TYPES.length >= 50, `only ${TYPES.length} types`);
  for (const type of TYPES) assert.equal(criMessageCodec(type.name).name, type.fullName.slice(1));
});

Deno.test("CRI codec encodes and decodes random messages exactly as protobufjs", () => {
  const prng = new Prng(0x5eed_c41);
  for (const type of TYPES) {
    const ours = criMessageCodec<unknown>(type.name);
    for (let i = 0; i < 60; i++) {
      const value = randomMessage(prng, type, 0);
      const expectedBytes = refEncode(type, value);
      assert.deepStrictEqual(ours.encode(value), expectedBytes, `${type.name} #${i}`);
      assert.deepStrictEqual(ours.decode(expectedBytes), refDecode(type, expectedBytes));
    }
  }
});

Deno.test("CRI codec decodes unknown fields and mismatched wire types as protobufjs", () => {
  const prng = new Prng(77);
  for (const type of TYPES) {
    for (let i = 0; i < 20; i++) {
      const bytes = [...refEncode(type, randomMessage(prng, type, 0))];
      const n = 1 + prng.int(3);
      for (let k = 0; k < n; k++) bytes.push(...unknownField(prng, type.fieldsArray.length > 0));
      // A declared field with another wire type is skipped, not misread.
      const field = type.fieldsArray[prng.int(Math.max(1, type.fieldsArray.length))];
      if (field !== undefined) {
        const wrong = field.resolve().resolvedType instanceof protobuf.Enum ||
            ["bool", "int64", "int32", "uint32"].includes(field.type)
          ? [...varint((field.id << 3) | 5), 9, 9, 9, 9]
          : [...varint((field.id << 3) | 0), 5];
        bytes.push(...wrong);
      }
      decodeBoth(type, Uint8Array.from(bytes));
    }
  }
});

Deno.test("CRI codec skips a group in a message type without fields", () => {
  const group = [...varint((900 << 3) | 3), 0x08, 0x01, ...varint((900 << 3) | 4)];
  const decoded = criMessageCodec<unknown>("StopPodSandboxResponse").decode(Uint8Array.from(group));
  assert.deepEqual(decoded, {});
  const unterminated = Uint8Array.from(group.slice(0, -2));
  assert.throws(() => criMessageCodec<unknown>("StopPodSandboxResponse").decode(unterminated));
});

Deno.test("CRI codec decodes invalid UTF-8 and unknown enum values as protobufjs", () => {
  // ContainerStatus{id: <ff fe 'a' c3>, state: 9, labels: {<e2 82>: <80 ed a0 80>}}
  const entry = [0x0a, 0x02, 0xe2, 0x82, 0x12, 0x04, 0x80, 0xed, 0xa0, 0x80];
  const bytes = Uint8Array.from([
    ...[0x0a, 0x04, 0xff, 0xfe, 0x61, 0xc3],
    ...[0x18, 0x09],
    ...[0x62, entry.length, ...entry],
  ]);
  decodeBoth(reference("ContainerStatus"), bytes);
  const decoded = criMessageCodec<{ id: string; state: number }>("ContainerStatus").decode(bytes);
  assert.equal(decoded.id, "\ufffd\ufffda\ufffd");
  assert.equal(decoded.state, 9);
});

Deno.test("CRI codec merges a repeated singular sub-message as protobufjs", () => {
  // ContainerStatus{metadata: {name: "a"}, metadata: {attempt: 3}}
  const bytes = Uint8Array.from([0x12, 0x03, 0x0a, 0x01, 0x61, 0x12, 0x02, 0x10, 0x03]);
  decodeBoth(reference("ContainerStatus"), bytes);
  const decoded = criMessageCodec<{ metadata: unknown }>("ContainerStatus").decode(bytes);
  assert.deepEqual(decoded.metadata, { name: "a", attempt: 3 });
});

Deno.test("CRI codec rejects every truncation with an Error, as protobufjs", () => {
  const prng = new Prng(4242);
  for (
    const name of ["ListPodSandboxResponse", "ListContainersResponse", "ContainerStatusResponse"]
  ) {
    const type = reference(name);
    const bytes = refEncode(type, randomMessage(prng, type, 0));
    for (let cut = 0; cut < bytes.length; cut++) decodeBoth(type, bytes.subarray(0, cut));
  }
});

Deno.test("CRI codec: corrupted bytes decode as protobufjs or fail with an Error", () => {
  const prng = new Prng(99);
  for (let i = 0; i < 3000; i++) {
    const type = prng.pick(TYPES);
    const bytes = refEncode(type, randomMessage(prng, type, 0));
    if (bytes.length === 0) continue;
    const flips = 1 + prng.int(3);
    for (let k = 0; k < flips; k++) bytes[prng.int(bytes.length)] = prng.int(256);
    decodeBoth(type, bytes);
    // Pure noise too.
    decodeBoth(type, prng.bytes(prng.int(40)));
  }
});

Deno.test("CRI codec refuses what protobufjs refuses to encode", () => {
  const ours = criMessageCodec<unknown>("ContainerStatus");
  assert.throws(() => ours.encode({ metadata: "nope" } as never), TypeError);
  assert.throws(() => ours.encode({ mounts: { containerPath: "/x" } } as never), TypeError);
  assert.throws(() => ours.encode({ labels: "a=b" } as never), TypeError);
  assert.throws(() => ours.encode({ mounts: [null] } as never), TypeError);
});
