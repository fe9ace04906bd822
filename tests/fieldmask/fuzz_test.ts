/**
 * Seeded fuzzing of the mask parsers: every generated input either parses or
 * throws the documented error class, never anything else.
 */

import assert from "node:assert/strict";
import {
  type FieldMask,
  FieldMaskError,
  type FieldSchema,
  parseFieldMask,
  parseFieldMaskText,
  project,
} from "../../src/fieldmask/mod.ts";
import { decodeFieldMaskBinary, encodeFieldMaskBinary } from "../../src/proto/field_mask_bin.ts";
import { TEST_POD_SCHEMA } from "./_schema.ts";
import { makeFullPod } from "./_pods.ts";
import { prng } from "../_support/prng.ts";

const ITERATIONS = 100_000;
const MAX_MESSAGE_LENGTH = 400;
const POD = makeFullPod(3);

const NAMES = [
  ...new Set([...TEST_POD_SCHEMA.messages.values()].flatMap((m) => [...m.fields.keys()])),
];
const JUNK = [
  "",
  " ",
  "\t",
  ".",
  "..",
  ",",
  ",,",
  "\u0000",
  "\u001b",
  "\ud800",
  "\udfff",
  "😀",
  "\ufffd",
  "é",
  "*",
  "[0]",
  "__proto__",
  "constructor",
  "Metadata",
  "pod_ips",
  "\n",
  "\u2028",
  "\ufeff",
];

function pick<T>(rand: () => number, items: readonly T[]): T {
  return items[Math.floor(rand() * items.length)] as T;
}

const FIELDS_BY_TYPE = new Map(
  [...TEST_POD_SCHEMA.messages].map(([type, message]) => [type, [...message.fields]]),
);

/** A path walked through the schema: valid unless corrupted afterwards. */
function schemaPath(rand: () => number): string {
  const segments: string[] = [];
  let type: string | undefined = TEST_POD_SCHEMA.root;
  while (type !== undefined) {
    const [name, field]: [string, FieldSchema] = pick(rand, FIELDS_BY_TYPE.get(type) ?? []);
    segments.push(name);
    type = field.kind === "message" && rand() < 0.7 ? field.type : undefined;
  }
  return segments.join(".");
}

/** Damages a path: junk segments, bad separators, steps past a leaf. */
function corrupt(rand: () => number, path: string): string {
  const r = rand();
  if (r < 0.25) return `${path}.${pick(rand, rand() < 0.5 ? NAMES : JUNK)}`;
  if (r < 0.5) return path.replace(".", pick(rand, JUNK));
  if (r < 0.75) {
    const segments = path.split(".");
    segments[Math.floor(rand() * segments.length)] = pick(rand, JUNK) +
      (rand() < 0.5 ? pick(rand, NAMES) : "");
    return segments.join(".");
  }
  return pick(rand, NAMES) + pick(rand, JUNK) + path;
}

/** A mask text: paths through the schema, some damaged, odd separators now and then. */
function maskText(rand: () => number): string {
  const paths: string[] = [];
  const count = 1 + Math.floor(rand() * 6);
  const damage = rand() < 0.5 ? 0 : 0.3;
  for (let p = 0; p < count; p++) {
    const path = rand() < damage ? corrupt(rand, schemaPath(rand)) : schemaPath(rand);
    paths.push(rand() < 0.2 ? ` ${path}\t` : path);
  }
  return paths.join(rand() < 0.97 ? "," : pick(rand, JUNK));
}

/** A binary blob: an encoded mask, mutated, or plain random bytes. */
function maskBlob(rand: () => number, text: string): Uint8Array {
  const r = rand();
  if (r < 0.1) {
    const random = new Uint8Array(Math.floor(rand() * 40));
    for (let i = 0; i < random.length; i++) random[i] = Math.floor(rand() * 256);
    return random;
  }
  const bytes = encodeFieldMaskBinary(text.toWellFormed().split(","));
  if (r < 0.4 || bytes.length === 0) return bytes;
  const mutated = Array.from(bytes);
  const edits = 1 + Math.floor(rand() * 3);
  for (let e = 0; e < edits; e++) {
    const at = Math.floor(rand() * mutated.length);
    const kind = rand();
    if (kind < 0.4) mutated[at] = Math.floor(rand() * 256);
    else if (kind < 0.6) mutated.splice(at, 0, Math.floor(rand() * 256));
    else if (kind < 0.8) mutated.length = at;
    else mutated.splice(at, 0, 0x10 + Math.floor(rand() * 8) * 8 + Math.floor(rand() * 8));
  }
  return new Uint8Array(mutated);
}

/** Checks a mask that parsed: canonical, and projecting with it works. */
function checkMask(mask: FieldMask): void {
  if (mask.isAll) return;
  assert.equal(parseFieldMask(mask.paths, TEST_POD_SCHEMA).key, mask.key);
  const out = project(mask, POD);
  assert.equal(out.metadata.uid, POD.metadata.uid);
}

function expectOnly(err: unknown, ...classes: (typeof FieldMaskError | typeof TypeError)[]): void {
  if (!classes.some((c) => err instanceof c)) throw err;
  assert.ok(
    (err as Error).message.length <= MAX_MESSAGE_LENGTH,
    (err as Error).message.slice(0, 500),
  );
}

Deno.test("parseFieldMaskText() and decodeFieldMaskBinary() only parse or throw their errors, fuzzed", () => {
  const rand = prng(0x5eed);
  const seen = { textOk: 0, textErr: 0, binOk: 0, binErr: 0 };
  for (let i = 0; i < ITERATIONS; i++) {
    const text = maskText(rand);
    try {
      checkMask(parseFieldMaskText(text, TEST_POD_SCHEMA));
      seen.textOk++;
    } catch (err) {
      expectOnly(err, FieldMaskError);
      seen.textErr++;
    }
    const blob = maskBlob(rand, text);
    let paths: string[];
    try {
      paths = decodeFieldMaskBinary(blob);
    } catch (err) {
      expectOnly(err, TypeError);
      seen.binErr++;
      continue;
    }
    const again = decodeFieldMaskBinary(encodeFieldMaskBinary(paths));
    assert.ok(again.length === paths.length && again.every((p, j) => p === paths[j]));
    try {
      checkMask(parseFieldMask(paths, TEST_POD_SCHEMA));
      seen.binOk++;
    } catch (err) {
      expectOnly(err, FieldMaskError);
      seen.binErr++;
    }
  }
  // The generator must exercise both outcomes of both parsers.
  for (const [outcome, count] of Object.entries(seen)) {
    assert.ok(count > ITERATIONS / 100, `too few ${outcome}: ${JSON.stringify(seen)}`);
  }
});
