/**
 * A connection's open streams by id.
 *
 * @module
 */

import type { Http2Stream } from "./stream.ts";

/** What the connection's reader and control frames may do with the table. */
export interface ReadonlyStreamTable {
  /** Streams open now. */
  readonly size: number;
  /** @returns The open stream with this id, if any. */
  get(id: number): Http2Stream | undefined;
  /** @returns The open streams, in a new array (safe to change the table while walking it). */
  values(): Http2Stream[];
}

/**
 * The open streams, keyed by id in a null-prototype object rather than a
 * Map. A Map lives as long as its connection and takes a stream in and out
 * per request, so it makes a new hash table every few requests, and V8
 * keeps in each replaced table a link to its successor (for live
 * iterators): once a full collection has moved one table to the old
 * generation, each dead table keeps the next one alive through the
 * scavenges, and with it the streams it held (see the frame writer's line
 * of ready streams, where this was measured). An object's element
 * dictionary is replaced without such links.
 */
export class StreamTable implements ReadonlyStreamTable {
  #byId: Record<number, Http2Stream | undefined> = Object.create(null);
  #size = 0;

  get size(): number {
    return this.#size;
  }

  get(id: number): Http2Stream | undefined {
    return this.#byId[id];
  }

  /**
   * @param id The stream's id.
   * @param stream The stream, in place of any stream there under that id.
   */
  set(id: number, stream: Http2Stream): void {
    if (this.#byId[id] === undefined) this.#size++;
    this.#byId[id] = stream;
  }

  /**
   * @param id A stream id.
   * @returns Whether a stream was there.
   */
  delete(id: number): boolean {
    if (this.#byId[id] === undefined) return false;
    delete this.#byId[id];
    this.#size--;
    return true;
  }

  values(): Http2Stream[] {
    const streams: Http2Stream[] = [];
    for (const id in this.#byId) streams.push(this.#byId[id as unknown as number]!);
    return streams;
  }

  /** Forgets every stream. */
  clear(): void {
    this.#byId = Object.create(null);
    this.#size = 0;
  }
}
