/**
 * A map for keys that come and go many times a second inside an object that
 * lives long: a connection's open streams, a watcher's pending events.
 *
 * @module
 */

/** What a reader of a {@linkcode ChurnMap} may do with it. */
export interface ReadonlyChurnMap<K extends string | number, V extends NonNullable<unknown>> {
  /** Entries held now. */
  readonly size: number;
  /** @returns The value under `key`, if any. */
  get(key: K): V | undefined;
  /** @returns The values, in a new array (safe to change the map while walking it). */
  values(): V[];
}

/**
 * Keys in a null-prototype object rather than a Map. A Map that outlives
 * the young generation and takes a key in and out per request or event
 * makes a new hash table every few changes, and V8 keeps in each replaced
 * table a link to its successor (for live iterators): once a full
 * collection has moved one table to the old generation, each dead table
 * keeps the next one alive through the scavenges, and with it every value
 * it held, which is then promoted. Measured at 1000 pods under GetPod c=4
 * (BENCHMARKS.md, "the collector"): with a connection's streams in Maps and
 * Sets, every request's streams, calls and header maps were promoted, and a
 * mark-compact ran every 300 ms. An object's property or element
 * dictionary is replaced without such links.
 *
 * The price is in every lookup: a microbenchmark of one request's set, two
 * gets and a delete by stream id took about 0.8 µs against a Map's 0.15-0.25,
 * and an event's set, get and delete by UID 0.2-0.26 µs against 0.1-0.13
 * (`deno run` of a loop, Deno 2.9.3). The collector's savings are of the
 * same order (a mark-compact of ~40 ms every second or two under GetPod at
 * 1000 pods), and on this shared machine the end-to-end CPU per request
 * could not tell the two apart: a faster table with the same property
 * (open addressing over a plain array) is the next step, not more of this.
 *
 * Values are never `undefined` (a missing key reads as `undefined`).
 */
export class ChurnMap<K extends string | number, V extends NonNullable<unknown>>
  implements ReadonlyChurnMap<K, V> {
  #byKey: Record<K, V | undefined> = Object.create(null);
  #size = 0;

  get size(): number {
    return this.#size;
  }

  get(key: K): V | undefined {
    return this.#byKey[key];
  }

  /**
   * @param key The key.
   * @param value The value, in place of any value under that key.
   */
  set(key: K, value: V): void {
    if (this.#byKey[key] === undefined) this.#size++;
    this.#byKey[key] = value;
  }

  /**
   * @param key A key.
   * @returns Whether a value was there.
   */
  delete(key: K): boolean {
    if (this.#byKey[key] === undefined) return false;
    delete this.#byKey[key];
    this.#size--;
    return true;
  }

  /** Integer keys in ascending order, then the others in the order they were set. */
  values(): V[] {
    const values: V[] = [];
    for (const key in this.#byKey) values.push(this.#byKey[key]!);
    return values;
  }

  /** Forgets every entry. */
  clear(): void {
    this.#byKey = Object.create(null);
    this.#size = 0;
  }
}
