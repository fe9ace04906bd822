/**
 * ASN.1 DER, as much as an X.509 certificate needs: definite-length TLVs
 * written from their parts, and read back into a tree of nodes.
 *
 * @module
 */

import { concatBytes } from "../bytes_concat.ts";

/** Universal tags used here. */
export const TAG = {
  boolean: 0x01,
  integer: 0x02,
  bitString: 0x03,
  octetString: 0x04,
  oid: 0x06,
  utf8String: 0x0c,
  utcTime: 0x17,
  generalizedTime: 0x18,
  sequence: 0x30,
  set: 0x31,
} as const;

/** Bytes on a plain `ArrayBuffer`, as WebCrypto takes them. */
export type Bytes = Uint8Array<ArrayBuffer>;

function lengthBytes(n: number): number[] {
  if (n < 0x80) return [n];
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return [0x80 | bytes.length, ...bytes];
}

/**
 * One TLV.
 *
 * @param tag The identifier octet.
 * @param content The content octets, concatenated in order.
 * @returns The encoding.
 */
export function tlv(tag: number, ...content: readonly Uint8Array[]): Bytes {
  const body = concatBytes(content);
  return concatBytes([Uint8Array.of(tag, ...lengthBytes(body.length)), body]);
}

/**
 * A SEQUENCE of already encoded items.
 *
 * @param items The items.
 * @returns The encoding.
 */
export function sequence(...items: readonly Uint8Array[]): Bytes {
  return tlv(TAG.sequence, ...items);
}

/**
 * A non-negative INTEGER from its big-endian magnitude (leading zeros dropped,
 * a zero octet added when the high bit would read as a sign).
 *
 * @param magnitude Big-endian bytes.
 * @returns The encoding.
 */
export function unsignedInteger(magnitude: Uint8Array): Bytes {
  let start = 0;
  while (start < magnitude.length - 1 && magnitude[start] === 0) start++;
  const body = magnitude.subarray(start);
  const pad = body.length === 0 || (body[0]! & 0x80) !== 0;
  return tlv(TAG.integer, pad ? Uint8Array.of(0) : new Uint8Array(), body);
}

/**
 * A small non-negative INTEGER.
 *
 * @param n 0 to 255.
 * @returns The encoding.
 */
export function smallInteger(n: number): Bytes {
  return unsignedInteger(Uint8Array.of(n));
}

/**
 * An OBJECT IDENTIFIER from its dotted form.
 *
 * @param dotted E.g. `2.5.29.17`.
 * @returns The encoding.
 */
export function oid(dotted: string): Bytes {
  const arcs = dotted.split(".").map(Number);
  const out: number[] = [arcs[0]! * 40 + arcs[1]!];
  for (const arc of arcs.slice(2)) {
    const group: number[] = [arc & 0x7f];
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128)) {
      group.unshift(0x80 | (v & 0x7f));
    }
    out.push(...group);
  }
  return tlv(TAG.oid, Uint8Array.from(out));
}

/**
 * A BOOLEAN.
 *
 * @param value The value.
 * @returns The encoding.
 */
export function boolean(value: boolean): Bytes {
  return tlv(TAG.boolean, Uint8Array.of(value ? 0xff : 0));
}

/**
 * A BIT STRING of whole octets.
 *
 * @param bytes The bits.
 * @returns The encoding.
 */
export function bitString(bytes: Uint8Array): Bytes {
  return tlv(TAG.bitString, Uint8Array.of(0), bytes);
}

/**
 * An OCTET STRING.
 *
 * @param bytes The octets.
 * @returns The encoding.
 */
export function octetString(bytes: Uint8Array): Bytes {
  return tlv(TAG.octetString, bytes);
}

/**
 * A UTF8String.
 *
 * @param text The text.
 * @returns The encoding.
 */
export function utf8String(text: string): Bytes {
  return tlv(TAG.utf8String, new TextEncoder().encode(text));
}

/**
 * An X.509 time: UTCTime through 2049, GeneralizedTime from 2050 (RFC 5280
 * 4.1.2.5), to the second, in UTC.
 *
 * @param ms Milliseconds since the epoch.
 * @returns The encoding.
 */
export function x509Time(ms: number): Bytes {
  const iso = new Date(Math.floor(ms / 1000) * 1000).toISOString(); // YYYY-MM-DDTHH:MM:SS.000Z
  const digits = iso.slice(0, 19).replace(/[-T:]/g, "");
  const year = Number(iso.slice(0, 4));
  return year < 2050
    ? tlv(TAG.utcTime, new TextEncoder().encode(digits.slice(2) + "Z"))
    : tlv(TAG.generalizedTime, new TextEncoder().encode(digits + "Z"));
}

/**
 * A context-specific tag: `[n]` constructed (EXPLICIT, wrapping encodings) or
 * primitive (IMPLICIT, wrapping raw octets).
 *
 * @param n The tag number, 0 to 30.
 * @param constructed Whether the content is encodings.
 * @param content The content.
 * @returns The encoding.
 */
export function contextTag(n: number, constructed: boolean, content: Uint8Array): Bytes {
  return tlv(0x80 | (constructed ? 0x20 : 0) | n, content);
}

/** A TLV read back: its identifier octet, content, and for constructed ones the children. */
export interface DerNode {
  readonly tag: number;
  readonly content: Uint8Array;
  /** The whole encoding, tag and length included. */
  readonly bytes: Uint8Array;
  readonly children: readonly DerNode[];
}

/** Malformed DER. */
export class DerError extends Error {
  override name = "DerError";
}

function readAt(buf: Uint8Array, at: number): { node: DerNode; end: number } {
  const tag = buf[at];
  if (tag === undefined) throw new DerError("truncated: no tag");
  if ((tag & 0x1f) === 0x1f) throw new DerError("multi-octet tags are not supported");
  let lenByte = buf[at + 1];
  if (lenByte === undefined) throw new DerError("truncated: no length");
  let start = at + 2;
  let length = lenByte;
  if (lenByte & 0x80) {
    const count = lenByte & 0x7f;
    if (count === 0 || count > 4) throw new DerError("unsupported length");
    length = 0;
    for (let i = 0; i < count; i++) {
      lenByte = buf[start + i];
      if (lenByte === undefined) throw new DerError("truncated length");
      length = length * 256 + lenByte;
    }
    start += count;
  }
  const end = start + length;
  if (end > buf.length) throw new DerError("truncated content");
  const content = buf.subarray(start, end);
  const children: DerNode[] = [];
  if (tag & 0x20) {
    for (let p = 0; p < content.length;) {
      const child = readAt(content, p);
      children.push(child.node);
      p = child.end;
    }
  }
  return { node: { tag, content, bytes: buf.subarray(at, end), children }, end };
}

/**
 * Reads one TLV that spans all of `bytes`.
 *
 * @param bytes The encoding.
 * @returns The tree.
 * @throws {DerError} On malformed or trailing input.
 */
export function readDer(bytes: Uint8Array): DerNode {
  const { node, end } = readAt(bytes, 0);
  if (end !== bytes.length) throw new DerError("trailing bytes");
  return node;
}

/**
 * An X.509 time read back.
 *
 * @param node A UTCTime or GeneralizedTime.
 * @returns Milliseconds since the epoch.
 * @throws {DerError} For another tag or a malformed value.
 */
export function readX509Time(node: DerNode): number {
  const text = new TextDecoder().decode(node.content);
  const m = node.tag === TAG.utcTime
    ? /^(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/.exec(text)
    : node.tag === TAG.generalizedTime
    ? /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/.exec(text)
    : null;
  if (m === null) throw new DerError(`not an X.509 time: ${text}`);
  let year = Number(m[1]);
  if (node.tag === TAG.utcTime) year += year < 50 ? 2000 : 1900;
  const [mo, d, h, mi, s] = m.slice(2).map(Number) as [number, number, number, number, number];
  return Date.UTC(year, mo - 1, d, h, mi, s);
}
