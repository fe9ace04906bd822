/**
 * HPACK's two index spaces (RFC 7541 section 2.3): the static table of
 * Appendix A and the per-connection dynamic table.
 *
 * @module
 */

/** A header field: name and value, each one octet per code unit. */
export type HeaderField = readonly [name: string, value: string];

/**
 * Octets each dynamic table entry costs on top of its name and value (RFC
 * 7541 section 4.1); the same overhead counts toward SETTINGS_MAX_HEADER_LIST_SIZE.
 */
export const ENTRY_OVERHEAD = 32;

/**
 * The static table of RFC 7541 Appendix A. HPACK indices start at 1: index `i`
 * is `STATIC_TABLE[i - 1]`, and the dynamic table starts at
 * `STATIC_TABLE.length + 1` (62).
 */
export const STATIC_TABLE: readonly HeaderField[] = Object.freeze(
  ([
    [":authority", ""],
    [":method", "GET"],
    [":method", "POST"],
    [":path", "/"],
    [":path", "/index.html"],
    [":scheme", "http"],
    [":scheme", "https"],
    [":status", "200"],
    [":status", "204"],
    [":status", "206"],
    [":status", "304"],
    [":status", "400"],
    [":status", "404"],
    [":status", "500"],
    ["accept-charset", ""],
    ["accept-encoding", "gzip, deflate"],
    ["accept-language", ""],
    ["accept-ranges", ""],
    ["accept", ""],
    ["access-control-allow-origin", ""],
    ["age", ""],
    ["allow", ""],
    ["authorization", ""],
    ["cache-control", ""],
    ["content-disposition", ""],
    ["content-encoding", ""],
    ["content-language", ""],
    ["content-length", ""],
    ["content-location", ""],
    ["content-range", ""],
    ["content-type", ""],
    ["cookie", ""],
    ["date", ""],
    ["etag", ""],
    ["expect", ""],
    ["expires", ""],
    ["from", ""],
    ["host", ""],
    ["if-match", ""],
    ["if-modified-since", ""],
    ["if-none-match", ""],
    ["if-range", ""],
    ["if-unmodified-since", ""],
    ["last-modified", ""],
    ["link", ""],
    ["location", ""],
    ["max-forwards", ""],
    ["proxy-authenticate", ""],
    ["proxy-authorization", ""],
    ["range", ""],
    ["referer", ""],
    ["refresh", ""],
    ["retry-after", ""],
    ["server", ""],
    ["set-cookie", ""],
    ["strict-transport-security", ""],
    ["transfer-encoding", ""],
    ["user-agent", ""],
    ["vary", ""],
    ["via", ""],
    ["www-authenticate", ""],
  ] as const).map((field): HeaderField => Object.freeze(field)),
);

/** Per static name: its lowest index, and the index of each value it has. */
const STATIC_NAMES: ReadonlyMap<string, StaticName> = indexStaticTable();

interface StaticName {
  index: number;
  values: Map<string, number>;
}

function indexStaticTable(): Map<string, StaticName> {
  const names = new Map<string, StaticName>();
  STATIC_TABLE.forEach(([name, value], i) => {
    let entry = names.get(name);
    if (entry === undefined) {
      entry = { index: i + 1, values: new Map() };
      names.set(name, entry);
    }
    if (!entry.values.has(value)) entry.values.set(value, i + 1);
  });
  return names;
}

/**
 * Finds a field, name and value, in the static table.
 *
 * @param name The header name (lowercase, as HTTP/2 sends it).
 * @param value The header value.
 * @returns Its HPACK index (1 to 61), or 0 when the table lacks it.
 */
export function findStaticField(name: string, value: string): number {
  return STATIC_NAMES.get(name)?.values.get(value) ?? 0;
}

/**
 * Finds a header name in the static table.
 *
 * @param name The header name (lowercase, as HTTP/2 sends it).
 * @returns The lowest HPACK index (1 to 61) with that name, or 0 when the
 * table lacks it.
 */
export function findStaticName(name: string): number {
  return STATIC_NAMES.get(name)?.index ?? 0;
}

/**
 * Size of a table entry: name and value octets plus 32 (RFC 7541 4.1). Names
 * and values hold one octet per UTF-16 code unit, so `length` counts octets.
 *
 * @param field The entry.
 * @returns Its size in octets.
 */
export function entrySize(field: HeaderField): number {
  return field[0].length + field[1].length + ENTRY_OVERHEAD;
}

/** What readers of a {@linkcode DynamicTable} (tests, diagnostics) may see. */
export interface ReadonlyDynamicTable {
  /** Sum of the entries' sizes, in octets. */
  readonly size: number;
  /** The size the table may reach, in octets. */
  readonly maxSize: number;
  /** Number of entries. */
  readonly length: number;
  /**
   * @param index 0 for the newest entry (HPACK index 62), up to `length - 1`.
   * @returns The entry, or `undefined` past the end.
   */
  get(index: number): HeaderField | undefined;
  /** @returns Every entry, newest first (the order of HPACK indices). */
  entries(): HeaderField[];
}

/** Options of {@linkcode DynamicTable}. */
export interface DynamicTableOptions {
  /**
   * Keep name and field indices for {@linkcode DynamicTable.findField} and
   * {@linkcode DynamicTable.findName}. Only an encoder searches the table;
   * a decoder saves the bookkeeping.
   */
  searchable?: boolean;
}

/** Index bookkeeping of one name: its newest entry, and the newest per value. */
interface NameSlot {
  newest: number;
  values: Map<string, number>;
}

/**
 * The dynamic table (RFC 7541 section 2.3.2 and 4): a FIFO of header fields,
 * newest first, whose entries cost name + value + 32 octets and are evicted,
 * oldest first, to stay within `maxSize`. Entries live in a ring buffer, so
 * adding and evicting cost O(1).
 *
 * Entries are numbered by insertion order (their sequence number); the
 * searchable variant maps names and fields to the newest sequence number
 * holding them, which an entry's index derives from.
 *
 * @example
 * ```ts
 * import { DynamicTable } from "./hpack_tables.ts";
 *
 * const table = new DynamicTable(100);
 * table.add(["custom-key", "custom-header"]); // 55 octets
 * table.add(["custom-key", "custom-value"]); // 54 octets: the first is evicted
 * console.assert(table.length === 1 && table.size === 54);
 * ```
 */
export class DynamicTable implements ReadonlyDynamicTable {
  #ring: (HeaderField | undefined)[] = new Array(16);
  /** Ring slot of the oldest entry. */
  #oldest = 0;
  #length = 0;
  #size = 0;
  #maxSize: number;
  /** Entries added since creation: the next entry's sequence number. */
  #added = 0;
  readonly #names: Map<string, NameSlot> | undefined;

  /**
   * @param maxSize The size the table may reach, in octets.
   * @param options Whether the table keeps search indices.
   * @throws {RangeError} When `maxSize` is not a non-negative safe integer.
   */
  constructor(maxSize: number, options: DynamicTableOptions = {}) {
    checkSize(maxSize);
    this.#maxSize = maxSize;
    this.#names = options.searchable ? new Map() : undefined;
  }

  /** Sum of the entries' sizes, in octets. */
  get size(): number {
    return this.#size;
  }

  /** The size the table may reach, in octets. */
  get maxSize(): number {
    return this.#maxSize;
  }

  /** Number of entries. */
  get length(): number {
    return this.#length;
  }

  /**
   * @param index An integer: 0 for the newest entry (HPACK index 62), up to
   * `length - 1`.
   * @returns The entry, or `undefined` for an index below 0 or past the end.
   */
  get(index: number): HeaderField | undefined {
    if (!(index >= 0 && index < this.#length)) return undefined;
    return this.#ring[(this.#oldest + this.#length - 1 - index) & (this.#ring.length - 1)];
  }

  /** @returns Every entry, newest first (the order of HPACK indices). */
  entries(): HeaderField[] {
    const out: HeaderField[] = [];
    for (let i = 0; i < this.#length; i++) out.push(this.get(i)!);
    return out;
  }

  /**
   * Adds a field as the newest entry, evicting the oldest ones until it fits.
   * A field larger than `maxSize` empties the table and is not added: that
   * is not an error (RFC 7541 section 4.4).
   *
   * @param field The field; kept by reference, so it must not change.
   */
  add(field: HeaderField): void {
    const size = entrySize(field);
    if (size > this.#maxSize) {
      this.#evictTo(0);
      return;
    }
    this.#evictTo(this.#maxSize - size);
    if (this.#length === this.#ring.length) this.#grow();
    this.#ring[(this.#oldest + this.#length) & (this.#ring.length - 1)] = field;
    this.#length++;
    this.#size += size;
    const sequence = this.#added++;
    if (this.#names === undefined) return;
    const [name, value] = field;
    const slot = this.#names.get(name);
    if (slot === undefined) {
      this.#names.set(name, { newest: sequence, values: new Map([[value, sequence]]) });
    } else {
      slot.newest = sequence;
      slot.values.set(value, sequence);
    }
  }

  /**
   * Changes the maximum size, evicting the oldest entries until the table
   * fits (RFC 7541 section 4.3).
   *
   * @param maxSize The new maximum, in octets.
   * @throws {RangeError} When `maxSize` is not a non-negative safe integer.
   */
  resize(maxSize: number): void {
    checkSize(maxSize);
    this.#maxSize = maxSize;
    this.#evictTo(maxSize);
  }

  /**
   * Finds the newest entry with this name and value. Needs `searchable`.
   *
   * @param name The header name.
   * @param value The header value.
   * @returns Its index (0 for the newest entry), or -1.
   */
  findField(name: string, value: string): number {
    const sequence = this.#names?.get(name)?.values.get(value);
    return sequence === undefined ? -1 : this.#added - 1 - sequence;
  }

  /**
   * Finds the newest entry with this name. Needs `searchable`.
   *
   * @param name The header name.
   * @returns Its index (0 for the newest entry), or -1.
   */
  findName(name: string): number {
    const slot = this.#names?.get(name);
    return slot === undefined ? -1 : this.#added - 1 - slot.newest;
  }

  #evictTo(limit: number): void {
    const mask = this.#ring.length - 1;
    while (this.#size > limit) {
      const field = this.#ring[this.#oldest]!;
      this.#ring[this.#oldest] = undefined;
      const sequence = this.#added - this.#length;
      this.#oldest = (this.#oldest + 1) & mask;
      this.#length--;
      this.#size -= entrySize(field);
      if (this.#names !== undefined) this.#forget(field, sequence);
    }
  }

  /**
   * Drops the index entries that point at an evicted entry. Eviction goes
   * oldest first, so an index still naming this sequence number has no newer
   * entry to fall back to.
   */
  #forget([name, value]: HeaderField, sequence: number): void {
    const slot = this.#names!.get(name)!;
    if (slot.newest === sequence) {
      this.#names!.delete(name);
      return;
    }
    if (slot.values.get(value) === sequence) slot.values.delete(value);
  }

  #grow(): void {
    const ring: (HeaderField | undefined)[] = new Array(this.#ring.length * 2);
    for (let i = 0; i < this.#length; i++) {
      ring[i] = this.#ring[(this.#oldest + i) & (this.#ring.length - 1)];
    }
    this.#ring = ring;
    this.#oldest = 0;
  }
}

function checkSize(maxSize: number): void {
  if (!Number.isSafeInteger(maxSize) || maxSize < 0) {
    throw new RangeError(`Cannot size HPACK table: "${maxSize}" is not a non-negative integer`);
  }
}
