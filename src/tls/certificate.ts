/**
 * X.509 certificates with ECDSA P-256 keys from WebCrypto: issue one (a
 * self-signed CA or a serving certificate it signs, with the extensions Go,
 * OpenSSL in strict mode and rustls check), read back what the serving side
 * needs to decide whether a kept certificate still fits, and PEM armour.
 *
 * @module
 */

import {
  bitString,
  boolean,
  contextTag,
  DerError,
  type DerNode,
  octetString,
  oid,
  readDer,
  readX509Time,
  sequence,
  smallInteger,
  TAG,
  tlv,
  unsignedInteger,
  utf8String,
  x509Time,
} from "./der.ts";

/** The key algorithm of every key made here. */
export const EC_KEY_ALGORITHM: EcKeyGenParams = { name: "ECDSA", namedCurve: "P-256" };
const SIGN_ALGORITHM: EcdsaParams = { name: "ECDSA", hash: "SHA-256" };

const OID = {
  ecdsaWithSha256: "1.2.840.10045.4.3.2",
  commonName: "2.5.4.3",
  subjectKeyId: "2.5.29.14",
  keyUsage: "2.5.29.15",
  subjectAltName: "2.5.29.17",
  basicConstraints: "2.5.29.19",
  authorityKeyId: "2.5.29.35",
  extKeyUsage: "2.5.29.37",
  serverAuth: "1.3.6.1.5.5.7.3.1",
} as const;

/** What {@linkcode issueCertificate} puts in a certificate. */
export interface CertificateTemplate {
  readonly commonName: string;
  /** The subject's public key. */
  readonly publicKey: CryptoKey;
  /** Milliseconds since the epoch. */
  readonly notBefore: number;
  readonly notAfter: number;
  /** A CA (signs certificates) or a TLS server certificate. */
  readonly ca: boolean;
  readonly dnsNames?: readonly string[];
  readonly ipAddresses?: readonly string[];
}

/** Who signs: the CA's name, key and key identifier; absent for a self-signed certificate. */
export interface CertificateIssuer {
  readonly commonName: string;
  readonly privateKey: CryptoKey;
  readonly keyId: Uint8Array;
}

/** What {@linkcode readCertificate} reads back. */
export interface CertificateInfo {
  readonly notBefore: number;
  readonly notAfter: number;
  readonly ca: boolean;
  readonly dnsNames: readonly string[];
  /** In {@linkcode normalizeIp}'s form. */
  readonly ipAddresses: readonly string[];
}

/**
 * An IP address's octets.
 *
 * @param text IPv4 dotted or IPv6 (with `::`, without a zone).
 * @returns 4 or 16 octets, or `undefined` when `text` is not an address.
 */
export function ipOctets(text: string): Uint8Array | undefined {
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (v4 !== null) {
    const parts = v4.slice(1).map(Number);
    return parts.every((p) => p <= 255) ? Uint8Array.from(parts) : undefined;
  }
  if (!/^[0-9a-fA-F:]+$/.test(text) || !text.includes(":")) return undefined;
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const groups = (s: string) => s === "" ? [] : s.split(":");
  const head = groups(halves[0]!);
  const tail = halves.length === 2 ? groups(halves[1]!) : [];
  const fill = 8 - head.length - tail.length;
  if (halves.length === 1 ? fill !== 0 : fill < 1) return undefined;
  const all = [...head, ...Array<string>(halves.length === 2 ? fill : 0).fill("0"), ...tail];
  if (all.some((g) => g.length === 0 || g.length > 4)) return undefined;
  const out = new Uint8Array(16);
  all.forEach((g, i) => {
    const v = parseInt(g, 16);
    out[2 * i] = v >> 8;
    out[2 * i + 1] = v & 0xff;
  });
  return out;
}

function formatIp(octets: Uint8Array): string {
  if (octets.length === 4) return [...octets].join(".");
  const groups: string[] = [];
  for (let i = 0; i + 1 < octets.length; i += 2) {
    groups.push(((octets[i]! << 8) | octets[i + 1]!).toString(16));
  }
  return groups.join(":");
}

/**
 * One spelling per address, to compare addresses.
 *
 * @param text An address.
 * @returns IPv4 dotted, or IPv6 as eight uncompressed hex groups; `undefined` if not an address.
 */
export function normalizeIp(text: string): string | undefined {
  const octets = ipOctets(text);
  return octets === undefined ? undefined : formatIp(octets);
}

function name(commonName: string): Uint8Array {
  return sequence(tlv(TAG.set, sequence(oid(OID.commonName), utf8String(commonName))));
}

/** A BIT STRING of named bits as DER wants it: no trailing zero bits counted as used. */
function namedBits(byte: number): Uint8Array {
  let unused = 0;
  while (unused < 7 && ((byte >> unused) & 1) === 0) unused++;
  return tlv(TAG.bitString, Uint8Array.of(unused, byte));
}

function extension(id: string, critical: boolean, value: Uint8Array): Uint8Array {
  return sequence(oid(id), ...(critical ? [boolean(true)] : []), octetString(value));
}

/**
 * The key identifier of a public key: SHA-1 of its key bits (RFC 5280 4.2.1.2, method 1).
 *
 * @param publicKey An exportable public key.
 * @returns 20 octets.
 */
export async function keyIdentifier(publicKey: CryptoKey): Promise<Uint8Array> {
  const spki = readDer(new Uint8Array(await crypto.subtle.exportKey("spki", publicKey)));
  const bits = spki.children[1]!.content.slice(1);
  return new Uint8Array(await crypto.subtle.digest("SHA-1", bits));
}

/** WebCrypto's ECDSA signature (r || s) as X.509 wants it (SEQUENCE of two INTEGERs). */
function derSignature(raw: Uint8Array): Uint8Array {
  const half = raw.length / 2;
  return sequence(unsignedInteger(raw.subarray(0, half)), unsignedInteger(raw.subarray(half)));
}

/**
 * Issues a certificate: self-signed when `issuer` is absent (then the
 * template's key pair must be the signer's: pass its private key as `selfKey`).
 *
 * @param template Subject, key, validity, CA or server, names.
 * @param signer The issuer, or `{ selfKey }` for a self-signed certificate.
 * @returns The certificate, DER.
 */
export async function issueCertificate(
  template: CertificateTemplate,
  signer: CertificateIssuer | { readonly selfKey: CryptoKey },
): Promise<Uint8Array> {
  const spki = new Uint8Array(await crypto.subtle.exportKey("spki", template.publicKey));
  const subjectKeyId = await keyIdentifier(template.publicKey);
  const issuer = "selfKey" in signer
    ? { commonName: template.commonName, privateKey: signer.selfKey, keyId: subjectKeyId }
    : signer;
  const serial = crypto.getRandomValues(new Uint8Array(16));
  // Positive and never zero.
  serial[0] = (serial[0]! & 0x7f) | 0x40;
  const algorithm = sequence(oid(OID.ecdsaWithSha256));
  const extensions = [
    extension(
      OID.basicConstraints,
      true,
      template.ca ? sequence(boolean(true)) : sequence(),
    ),
    // digitalSignature, and for a CA keyCertSign and cRLSign.
    extension(OID.keyUsage, true, namedBits(template.ca ? 0x86 : 0x80)),
    extension(OID.subjectKeyId, false, octetString(subjectKeyId)),
  ];
  if (!template.ca) {
    extensions.push(
      extension(OID.extKeyUsage, false, sequence(oid(OID.serverAuth))),
      extension(OID.authorityKeyId, false, sequence(contextTag(0, false, issuer.keyId))),
    );
    const names = [
      ...(template.dnsNames ?? []).map((d) => contextTag(2, false, new TextEncoder().encode(d))),
      ...(template.ipAddresses ?? []).map((ip) => {
        const octets = ipOctets(ip);
        if (octets === undefined) throw new TypeError(`Not an IP address: "${ip}"`);
        return contextTag(7, false, octets);
      }),
    ];
    extensions.push(extension(OID.subjectAltName, false, sequence(...names)));
  }
  const tbs = sequence(
    contextTag(0, true, smallInteger(2)),
    unsignedInteger(serial),
    algorithm,
    name(issuer.commonName),
    sequence(x509Time(template.notBefore), x509Time(template.notAfter)),
    name(template.commonName),
    spki,
    contextTag(3, true, sequence(...extensions)),
  );
  const raw = new Uint8Array(await crypto.subtle.sign(SIGN_ALGORITHM, issuer.privateKey, tbs));
  return sequence(tbs, algorithm, bitString(derSignature(raw)));
}

function oidText(node: DerNode): string {
  const b = node.content;
  const arcs = [Math.floor(b[0]! / 40), b[0]! % 40];
  let v = 0;
  for (const byte of b.subarray(1)) {
    v = v * 128 + (byte & 0x7f);
    if ((byte & 0x80) === 0) {
      arcs.push(v);
      v = 0;
    }
  }
  return arcs.join(".");
}

/**
 * Reads the validity, CA flag and subject alternative names of a certificate.
 *
 * @param der The certificate.
 * @returns What it says.
 * @throws {DerError} When it is not a certificate.
 */
export function readCertificate(der: Uint8Array): CertificateInfo {
  const tbs = readDer(der).children[0];
  if (tbs === undefined || tbs.tag !== TAG.sequence) throw new DerError("not a certificate");
  const fields = tbs.children[0]?.tag === 0xa0 ? tbs.children.slice(1) : tbs.children;
  const validity = fields[3];
  if (validity === undefined || validity.children.length !== 2) {
    throw new DerError("certificate without validity");
  }
  let ca = false;
  const dnsNames: string[] = [];
  const ipAddresses: string[] = [];
  const extensions = fields.find((f) => f.tag === 0xa3)?.children[0]?.children ?? [];
  for (const ext of extensions) {
    const id = oidText(ext.children[0]!);
    const value = readDer(ext.children[ext.children.length - 1]!.content);
    if (id === OID.basicConstraints) {
      ca = value.children[0]?.tag === TAG.boolean && value.children[0].content[0] !== 0;
    } else if (id === OID.subjectAltName) {
      for (const n of value.children) {
        if (n.tag === 0x82) dnsNames.push(new TextDecoder().decode(n.content));
        if (n.tag === 0x87) ipAddresses.push(formatIp(n.content));
      }
    }
  }
  return {
    notBefore: readX509Time(validity.children[0]!),
    notAfter: readX509Time(validity.children[1]!),
    ca,
    dnsNames,
    ipAddresses,
  };
}

/**
 * PEM armour.
 *
 * @param label E.g. `CERTIFICATE`.
 * @param der The bytes.
 * @returns The PEM block, ending in a newline.
 */
export function toPem(label: string, der: Uint8Array): string {
  let binary = "";
  for (const b of der) binary += String.fromCharCode(b);
  const lines = btoa(binary).match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join("\n")}\n-----END ${label}-----\n`;
}

/**
 * The blocks of a PEM text with the given label, in order.
 *
 * @param text PEM text.
 * @param label E.g. `CERTIFICATE`.
 * @returns Their bytes.
 */
export function fromPem(text: string, label: string): Uint8Array[] {
  const out: Uint8Array[] = [];
  const re = new RegExp(`-----BEGIN ${label}-----([^-]*)-----END ${label}-----`, "g");
  for (const m of text.matchAll(re)) {
    out.push(Uint8Array.from(atob(m[1]!.replace(/\s+/g, "")), (c) => c.charCodeAt(0)));
  }
  return out;
}
