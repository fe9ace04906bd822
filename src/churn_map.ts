/**
 * A map for string keys that come and go many times a second inside an
 * object that lives long: a watcher's pending events by pod UID.
 *
 * @module
 */

/**
 * Keys in a null-prototype object rather than a Map. A Map that outlives
 * the young generation and takes a key in and out per event makes a new
 * hash table every few changes, and V8 keeps in each replaced table a link
 * to its successor (for live iterators): once a full collection has moved
 * one table to the old generation, each dead table keeps the next one alive
 * through the scavenges, and with it every value it held, which is then
 * promoted. An object's property dictionary is replaced without such links.
 * With the watchers' queues on this map, much less outlives the young
 * generation under live churn (BENCHMARKS.md, "Design figures").
 *
 * The price is in every lookup: about twice a Map's per set, get and
 * delete, small beside what an event costs. Integer keys fare much worse in
 * an object: a connection's streams have their own table
 * (`src/h2/_stream_table.ts`),
 * and strings do not, because hashing a 36-character UID in JavaScript
 * costs more than the whole Map operation.
 *
 * Values are never `undefined` (a missing key reads as `undefined`).
 */
export class ChurnMap<K extends string, V extends NonNullable<unknown>> {
  #byKey: Record<K, V | undefined> = Object.create(null);
  #size = 0;

  get size(): number {
    return this.#size;
  }

  /** @returns The value under `key`, if any. */
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

  /**
   * @returns The values, in a new array (safe to change the map while walking
   * it): keys that read as integers in ascending order, then the others in
   * the order they were set.
   */
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
