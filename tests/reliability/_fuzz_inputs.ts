/**
 * Generators of hostile requests for the fuzz tests: field masks (text and
 * binary), pod UIDs and GetPod bodies. Every input comes from a seeded
 * {@linkcode Prng}, so index `i` of a run is reproducible from the seed.
 *
 * @module
 */

import type { Prng } from "./_support.ts";

/**
 * Encodes a `google.protobuf.FieldMask{repeated string paths = 1}` without
 * checking the paths (the product's encoder refuses ill-formed ones).
 *
 * @param paths The paths.
 * @returns The bytes.
 */
export function encodeFieldMaskBinary(paths: readonly string[]): Uint8Array {
  const out: number[] = [];
  for (const path of paths) {
    const bytes = new TextEncoder().encode(path);
    out.push(0x0a, ...varint(bytes.length));
    for (const b of bytes) out.push(b);
  }
  return Uint8Array.from(out);
}

/** Field names of v1.Pod (real ones, so random joins are sometimes valid). */
const NAMES = [
  "metadata",
  "name",
  "namespace",
  "uid",
  "labels",
  "annotations",
  "ownerReferences",
  "kind",
  "spec",
  "containers",
  "image",
  "ports",
  "containerPort",
  "env",
  "value",
  "resources",
  "limits",
  "nodeName",
  "volumes",
  "status",
  "phase",
  "podIP",
  "podIPs",
  "ip",
  "conditions",
  "type",
  "containerStatuses",
  "state",
  "running",
  "startedAt",
  "restartCount",
  "deletionTimestamp",
  "creationTimestamp",
] as const;

/** Odd segments: empty, scalar-walks, map keys, punctuation, unicode. */
const ODD = [
  "",
  " ",
  "*",
  "..",
  "[0]",
  "name.name",
  "phase.x",
  "labels.app",
  "__proto__",
  "constructor",
  "toString",
  "hasOwnProperty",
  "\u00e9t\u00e9",
  "\u{1f600}",
  "\ud800",
  "a\u0000b",
  "%00",
  "metadata\n",
] as const;

/** Printable ASCII (the only text a grpc-js client may put in a text header). */
const ASCII = Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i));

/** A field-mask metadata value as a call would carry it. */
export type MaskValue = string | Uint8Array;

/** The metadata of one fuzzed call. */
export interface FuzzMetadata {
  text: MaskValue[];
  bin: Uint8Array[];
}

/**
 * @param rng The PRNG.
 * @returns A path made of field names and odd segments.
 */
export function randomPath(rng: Prng): string {
  const depth = 1 + rng.int(5);
  const parts: string[] = [];
  for (let i = 0; i < depth; i++) {
    parts.push(rng.next() < 0.85 ? rng.pick(NAMES) : rng.pick(ODD));
  }
  return parts.join(".");
}

/**
 * @param rng The PRNG.
 * @param asciiOnly Keep to what a text header can carry.
 * @returns A comma-separated mask text.
 */
export function randomMaskText(rng: Prng, asciiOnly: boolean): string {
  const kind = rng.int(4);
  if (kind === 0) {
    const n = rng.int(200);
    let s = "";
    for (let i = 0; i < n; i++) s += rng.pick(ASCII);
    return s;
  }
  const n = 1 + rng.int(6);
  const paths: string[] = [];
  for (let i = 0; i < n; i++) paths.push(randomPath(rng));
  const text = paths.join(rng.next() < 0.9 ? "," : rng.pick([", ", ",,", ";", " ,"]));
  return asciiOnly ? text.replace(/[^ -~]/g, "?") : text;
}

/**
 * @param rng The PRNG.
 * @returns A serialized FieldMask, valid or mutated (flipped, cut, padded).
 */
export function randomMaskBinary(rng: Prng): Uint8Array {
  const kind = rng.int(4);
  if (kind === 0) return rng.bytes(rng.int(300));
  const paths: string[] = [];
  for (let i = 0, n = rng.int(6); i < n; i++) paths.push(randomPath(rng));
  const good = encodeFieldMaskBinary(paths);
  if (kind === 1) return good;
  const bad = new Uint8Array(good);
  if (kind === 2) {
    for (let i = 0, n = 1 + rng.int(4); i < n && bad.length > 0; i++) {
      bad[rng.int(bad.length)] = rng.int(256);
    }
    return bad;
  }
  // A cut message, or one with an impossible length prefix or wire type.
  const cut = bad.subarray(0, rng.int(bad.length + 1));
  return rng.next() < 0.5
    ? cut
    : Uint8Array.from([...cut, rng.pick([0x0a, 0x0b, 0x0f, 0x12, 0x7a]), 0xff, 0xff, 0xff, 0x0f]);
}

/**
 * Builds one call's mask metadata: none, one text, one binary, several, both,
 * bytes under the text key, or, when `options.huge`, a huge one.
 *
 * @param rng The PRNG.
 * @param options `asciiOnly` for what a real client can send; `huge` to add
 *   a 1 MiB mask, 10 000 paths or a 5 000-segment path.
 * @returns The metadata values.
 */
export function randomMetadata(
  rng: Prng,
  options: { asciiOnly: boolean; huge: boolean },
): FuzzMetadata {
  if (options.huge) return hugeMask(rng);
  const kind = rng.int(10);
  switch (kind) {
    case 0:
      return { text: [], bin: [] };
    case 1:
    case 2:
    case 3:
      return { text: [randomMaskText(rng, options.asciiOnly)], bin: [] };
    case 4:
      return options.asciiOnly
        ? { text: [randomMaskText(rng, true)], bin: [] }
        : { text: [rng.bytes(rng.int(100))], bin: [] };
    case 5:
    case 6:
      return { text: [], bin: [randomMaskBinary(rng)] };
    case 7:
      return {
        text: [randomMaskText(rng, options.asciiOnly), randomMaskText(rng, options.asciiOnly)],
        bin: [],
      };
    case 8:
      return { text: [randomMaskText(rng, options.asciiOnly)], bin: [randomMaskBinary(rng)] };
    default:
      return { text: [], bin: [randomMaskBinary(rng), randomMaskBinary(rng)] };
  }
}

function hugeMask(rng: Prng): FuzzMetadata {
  const kind = rng.int(4);
  if (kind === 0) {
    // 1 MiB of text: a valid path repeated, with one odd path somewhere.
    const unit = "metadata.labels,";
    const text = unit.repeat(Math.ceil((1 << 20) / unit.length)).slice(0, 1 << 20);
    return { text: [text + rng.pick(["", "x", "status.phase"])], bin: [] };
  }
  if (kind === 1) {
    const paths: string[] = [];
    for (let i = 0; i < 10_000; i++) paths.push(rng.next() < 0.999 ? rng.pick(NAMES) : "status");
    return { text: [], bin: [encodeFieldMaskBinary(paths)] };
  }
  if (kind === 2) {
    const paths: string[] = [];
    for (let i = 0; i < 10_000; i++) paths.push(randomPath(rng));
    return { text: [paths.join(",")], bin: [] };
  }
  const segments: string[] = [];
  for (let i = 0; i < 5_000; i++) segments.push(rng.pick(NAMES));
  return { text: [segments.join(".")], bin: [] };
}

/**
 * @param rng The PRNG.
 * @param known UIDs the cache holds (some inputs use them).
 * @returns A UID: empty, huge, unicode, control characters, lookalikes, real.
 */
export function randomUid(rng: Prng, known: readonly string[]): string {
  switch (rng.int(8)) {
    case 0:
      return "";
    case 1:
      return rng.pick(known);
    case 2:
      return "xxxxxxxx-xxxx-4xxx-8xxx-xxxxxxxxxxxx".replace(
        /x/g,
        () => rng.pick([..."0123456789abcdef"]),
      );
    case 3:
      return "a".repeat(rng.int(1000) + 100);
    case 4: {
      let s = "";
      for (let i = 0, n = rng.int(40); i < n; i++) s += String.fromCodePoint(rng.int(0x10ffff));
      return s.replace(/[\ud800-\udfff]/g, "\ufffd");
    }
    case 5:
      return rng.pick(known) + rng.pick(["\n", "\u0000", " ", "/", "..", "\u202e"]);
    case 6:
      return rng.pick(["../../etc/passwd", "%", "*", "-", ".", "uid with space", "\\"]);
    default: {
      let s = "";
      for (let i = 0, n = 1 + rng.int(60); i < n; i++) s += rng.pick(ASCII);
      return s;
    }
  }
}

function varint(n: number): number[] {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return out;
}

/**
 * @param uid A UID.
 * @returns A `GetPodRequest{podUID=1}` holding it.
 */
export function encodeGetPodRequest(uid: string): Uint8Array {
  const bytes = new TextEncoder().encode(uid);
  return Uint8Array.from([0x0a, ...varint(bytes.length), ...bytes]);
}

/**
 * @param rng The PRNG.
 * @param known UIDs the cache holds.
 * @returns A GetPod body: a fuzzed UID, random bytes, a wrong wire type, a
 *   cut or overlong length, invalid UTF-8, unknown fields, repeated field.
 */
export function randomGetPodBody(rng: Prng, known: readonly string[]): Uint8Array {
  switch (rng.int(8)) {
    case 0:
    case 1:
    case 2:
      return encodeGetPodRequest(randomUid(rng, known));
    case 3:
      return rng.bytes(rng.int(200));
    case 4:
      return Uint8Array.from([rng.pick([0x08, 0x09, 0x0b, 0x0c, 0x0d]), ...rng.bytes(rng.int(10))]);
    case 5: {
      const good = encodeGetPodRequest(rng.pick(known));
      return good.subarray(0, rng.int(good.length));
    }
    case 6: {
      const junk = rng.bytes(1 + rng.int(20)).map((b) => b | 0x80);
      return Uint8Array.from([0x0a, junk.length, ...junk]);
    }
    default:
      return Uint8Array.from([
        ...encodeGetPodRequest(rng.pick(known)),
        ...rng.pick([[0x10, 0x01], [0x1a, 0x00], [0x0a, 0x01, 0x41], [0xf8, 0xff, 0xff, 0x0f, 0]]),
      ]);
  }
}
