/**
 * A connection's open streams by id: a hash table that takes a stream in and
 * out per request for as long as the connection lives, without allocating.
 *
 * @module
 */

/** Slots of a new or cleared table (a power of two). */
const INITIAL_SLOTS = 8;
/** Fibonacci hashing's multiplier: 2^32 divided by the golden ratio. */
const GOLDEN = 0x9e3779b9;

/**
 * Open addressing with linear probing over an `Int32Array` of ids (0: an
 * empty slot; no stream has id 0) and an array of streams, at most half
 * full; a removal moves later entries of its run back instead of leaving a
 * marker, so that a long life of requests leaves no debris to skip.
 *
 * Why not a `Map`: one that outlives the young generation and takes a key in
 * and out per request makes a new hash table every few changes, and V8 keeps
 * in each replaced table a link to its successor (for live iterators). Once a
 * full collection has moved one table to the old generation, each dead table
 * keeps the next one alive through the scavenges, and every stream it held,
 * which is then promoted, with its call and headers. These two arrays are made once and only grow (when a connection
 * has more streams open at once than ever before); a slot is written in
 * place. Its operations cost about what a `Map`'s do, and far less than a
 * null-prototype object's (BENCHMARKS.md, "Design figures").
 */
export class StreamTable<V extends object> {
  #ids = new Int32Array(INITIAL_SLOTS);
  #streams: (V | undefined)[] = new Array<V | undefined>(INITIAL_SLOTS).fill(undefined);
  /** 32 minus log2 of the slots: the hash's top bits index the table. */
  #shift = 32 - Math.log2(INITIAL_SLOTS);
  #mask = INITIAL_SLOTS - 1;
  #size = 0;

  /** Streams held now. */
  get size(): number {
    return this.#size;
  }

  /** The slot where `id` is looked for first. */
  #home(id: number): number {
    return Math.imul(id, GOLDEN) >>> this.#shift;
  }

  /** @returns The stream with id `id`, if open. */
  get(id: number): V | undefined {
    const ids = this.#ids;
    for (let i = this.#home(id);; i = (i + 1) & this.#mask) {
      const held = ids[i];
      if (held === id) return this.#streams[i];
      if (held === 0) return undefined;
    }
  }

  /**
   * @param id A stream id, 1 to 2^31-1.
   * @param stream The stream, in place of any under that id.
   * @throws {RangeError} For an id out of that range (a caller's bug: ids come checked from the connection).
   */
  set(id: number, stream: V): void {
    if (!(id > 0 && id <= 0x7fffffff && Number.isInteger(id))) {
      throw new RangeError(`Not a stream id: ${id}`);
    }
    const ids = this.#ids;
    let i = this.#home(id);
    for (;; i = (i + 1) & this.#mask) {
      const held = ids[i];
      if (held === id) {
        this.#streams[i] = stream;
        return;
      }
      if (held === 0) break;
    }
    ids[i] = id;
    this.#streams[i] = stream;
    if (++this.#size * 2 > ids.length) this.#grow();
  }

  /**
   * @param id A stream id.
   * @returns Whether a stream was there.
   */
  delete(id: number): boolean {
    const ids = this.#ids;
    const streams = this.#streams;
    const mask = this.#mask;
    let hole = this.#home(id);
    for (;; hole = (hole + 1) & mask) {
      const held = ids[hole];
      if (held === id) break;
      if (held === 0) return false;
    }
    // Later entries of the run whose home is not between the hole and
    // themselves would no longer be found past the hole: each moves into it.
    for (let i = (hole + 1) & mask; ids[i] !== 0; i = (i + 1) & mask) {
      const home = this.#home(ids[i]!);
      const reachable = hole <= i ? home > hole && home <= i : home > hole || home <= i;
      if (reachable) continue;
      ids[hole] = ids[i]!;
      streams[hole] = streams[i];
      hole = i;
    }
    ids[hole] = 0;
    streams[hole] = undefined;
    this.#size--;
    return true;
  }

  /** @returns The streams by ascending id, in a new array (safe to change the table while walking it). */
  values(): V[] {
    const ids: number[] = [];
    for (const id of this.#ids) if (id !== 0) ids.push(id);
    return ids.sort((a, b) => a - b).map((id) => this.get(id)!);
  }

  /**
   * Calls `visit` with each stream, in no set order, allocating nothing (for
   * what runs per frame). `visit` must not open or forget streams.
   */
  forEach(visit: (stream: V) => void): void {
    const ids = this.#ids;
    const streams = this.#streams;
    for (let i = 0; i < ids.length; i++) {
      if (ids[i] !== 0) visit(streams[i]!);
    }
  }

  /** Forgets every stream (and the room made for many). */
  clear(): void {
    this.#resize(INITIAL_SLOTS);
  }

  #grow(): void {
    const ids = this.#ids;
    const streams = this.#streams;
    this.#resize(ids.length * 2);
    for (let i = 0; i < ids.length; i++) {
      if (ids[i] !== 0) this.set(ids[i]!, streams[i]!);
    }
  }

  #resize(slots: number): void {
    this.#ids = new Int32Array(slots);
    this.#streams = new Array<V | undefined>(slots).fill(undefined);
    this.#shift = 32 - Math.log2(slots);
    this.#mask = slots - 1;
    this.#size = 0;
  }
}
