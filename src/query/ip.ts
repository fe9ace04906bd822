/**
 * IP addresses in one canonical text form, so that a pod found by
 * `10.1.2.3`, `2001:DB8::1` or `2001:db8:0:0:0:0:0:1` is the same pod.
 *
 * @module
 */

const V4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

function parseV4(text: string): number[] | undefined {
  const m = V4.exec(text);
  if (m === null) return undefined;
  const parts: number[] = [];
  for (let i = 1; i <= 4; i++) {
    const part = m[i]!;
    // Leading zeros are ambiguous (octal to some parsers): Go refuses them too.
    if (part.length > 1 && part.startsWith("0")) return undefined;
    const n = Number(part);
    if (n > 255) return undefined;
    parts.push(n);
  }
  return parts;
}

function parseV6(text: string): number[] | undefined {
  if (!/^[0-9A-Fa-f:.]+$/.test(text)) return undefined;
  let tail: number[] = [];
  let body = text;
  const lastColon = text.lastIndexOf(":");
  if (text.includes(".")) {
    const v4 = parseV4(text.slice(lastColon + 1));
    if (v4 === undefined) return undefined;
    tail = [(v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!];
    body = text.slice(0, lastColon + 1);
    // "::1.2.3.4": keep the "::"; "a::1.2.3.4" or "a:b:...:1.2.3.4": drop the last ":".
    if (!body.endsWith("::")) body = body.slice(0, -1);
  }
  const halves = body.split("::");
  if (halves.length > 2) return undefined;
  const groups = (s: string): number[] | undefined => {
    if (s === "") return [];
    const out: number[] = [];
    for (const g of s.split(":")) {
      if (!/^[0-9A-Fa-f]{1,4}$/.test(g)) return undefined;
      out.push(parseInt(g, 16));
    }
    return out;
  };
  const head = groups(halves[0]!);
  if (head === undefined) return undefined;
  if (halves.length === 1) {
    const all = [...head, ...tail];
    return all.length === 8 ? all : undefined;
  }
  const rest = groups(halves[1]!);
  if (rest === undefined) return undefined;
  const known = head.length + rest.length + tail.length;
  if (known > 7) return undefined;
  return [...head, ...new Array<number>(8 - known).fill(0), ...rest, ...tail];
}

function formatV6(groups: readonly number[]): string {
  // RFC 5952: the longest run of two or more zero groups becomes "::" (the first on a tie).
  let bestStart = -1;
  let bestLen = 1;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(":");
  return hex.slice(0, bestStart).join(":") + "::" + hex.slice(bestStart + bestLen).join(":");
}

/**
 * Canonicalizes an IPv4 or IPv6 address: IPv4 as dotted decimal (an
 * IPv4-mapped IPv6 address becomes its IPv4 form, as Go's `net.IP` treats
 * it), IPv6 as RFC 5952 text.
 *
 * @example
 * ```ts
 * normalizeIp("2001:DB8:0:0:0:0:0:1"); // "2001:db8::1"
 * normalizeIp("::ffff:10.0.0.1"); // "10.0.0.1"
 * ```
 *
 * @param text An address as a user or a source wrote it.
 * @returns The canonical form, or `undefined` when `text` is not an address.
 */
export function normalizeIp(text: string): string | undefined {
  const trimmed = text.trim();
  const v4 = parseV4(trimmed);
  if (v4 !== undefined) return v4.join(".");
  const v6 = parseV6(trimmed);
  if (v6 === undefined) return undefined;
  if (v6.slice(0, 5).every((g) => g === 0) && v6[5] === 0xffff) {
    return [v6[6]! >> 8, v6[6]! & 0xff, v6[7]! >> 8, v6[7]! & 0xff].join(".");
  }
  return formatV6(v6);
}
