/**
 * The streams of one HTTP/2 connection and the stream ids it has used: the
 * open streams by id, the highest id the peer opened, the next id this side
 * opens, and the streams this side reset lately. The connection passes it to
 * whatever reads or changes streams; nothing else keeps a stream list.
 *
 * @module
 */

import { StreamTable } from "./_stream_table.ts";
import type { ConnectionRole } from "./connection_options.ts";
import { ConnectionError, H2_ERROR, StreamError } from "./errors.ts";
import type { Http2Stream } from "./stream.ts";

/** Streams this side reset whose late frames are ignored, not treated as errors. */
const RESET_MEMORY = 1024;

/** A connection's streams: the table of open ones, and the ids used. */
export class StreamStore extends StreamTable<Http2Stream> {
  readonly #role: ConnectionRole;
  readonly #resetByUs = new Set<number>();
  #lastPeerStreamId = 0;
  #nextLocalStreamId: number;

  /** @param role Which side this is: clients open odd ids, servers even. */
  constructor(role: ConnectionRole) {
    super();
    this.#role = role;
    this.#nextLocalStreamId = role === "client" ? 1 : 2;
  }

  /** The highest stream id the peer has opened. */
  get lastPeerStreamId(): number {
    return this.#lastPeerStreamId;
  }

  /** The id the next stream this side opens takes. */
  get nextLocalStreamId(): number {
    return this.#nextLocalStreamId;
  }

  /** @returns Whether `stream` is open here (not removed, nor replaced). */
  holds(stream: Http2Stream): boolean {
    return this.get(stream.id) === stream;
  }

  /** @returns Whether this side opens streams of id `id`. */
  isLocal(id: number): boolean {
    return (id % 2 === 1) === (this.#role === "client");
  }

  /** @returns Whether no stream of id `id` has been opened yet. */
  isIdle(id: number): boolean {
    return this.isLocal(id) ? id >= this.#nextLocalStreamId : id > this.#lastPeerStreamId;
  }

  /** @returns A new id for a stream this side opens. */
  allocateLocalId(): number {
    const id = this.#nextLocalStreamId;
    this.#nextLocalStreamId += 2;
    return id;
  }

  /** @returns Whether `stream` was open here (and now is not). */
  remove(stream: Http2Stream): boolean {
    return this.holds(stream) && this.delete(stream.id);
  }

  /** @returns Every open stream, by ascending id; the store is left empty. */
  removeAll(): Http2Stream[] {
    const streams = this.values();
    this.clear();
    return streams;
  }

  /** @param id A stream this side reset: its late frames are ignored. */
  rememberReset(id: number): void {
    this.#resetByUs.add(id);
    if (this.#resetByUs.size > RESET_MEMORY) {
      this.#resetByUs.delete(this.#resetByUs.values().next().value!);
    }
  }

  /**
   * A frame for a stream that is not open: on an idle stream a connection
   * error, on one this side reset ignored, on another closed one an error.
   *
   * @throws {ConnectionError} Unless this side reset the stream.
   */
  notOpen(id: number, what: string): undefined {
    if (this.isIdle(id)) {
      throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, `${what} on idle stream ${id}`);
    }
    if (this.#resetByUs.has(id)) return undefined;
    throw new ConnectionError(H2_ERROR.STREAM_CLOSED, `${what} on closed stream ${id}`);
  }

  /**
   * Whether a header block for an id with no open stream opens a stream of
   * the peer's; the id becomes the last the peer opened.
   *
   * @param id The block's stream id.
   * @param selfDependent Whether its priority names itself.
   * @param refuseAbove Ids above this are refused (our GOAWAY's last id).
   * @param maxConcurrent Open streams allowed.
   * @returns `false` when the block is a late one of a stream this side reset.
   * @throws {ConnectionError} For an id the peer may not open.
   * @throws {StreamError} For a stream refused or malformed.
   */
  acceptPeerStream(
    id: number,
    selfDependent: boolean,
    refuseAbove: number,
    maxConcurrent: number,
  ): boolean {
    // A client's peer opens no stream (push is off).
    if (this.#role === "client" || this.isLocal(id)) {
      if (!this.isIdle(id) && this.#resetByUs.has(id)) return false;
      throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, `HEADERS opening stream ${id}`);
    }
    if (id <= this.#lastPeerStreamId) return this.notOpen(id, "HEADERS") ?? false;
    this.#lastPeerStreamId = id;
    if (selfDependent) {
      throw new StreamError(id, H2_ERROR.PROTOCOL_ERROR, "stream depends on itself");
    }
    if (id > refuseAbove) {
      throw new StreamError(id, H2_ERROR.REFUSED_STREAM, "the server is going away");
    }
    if (this.size >= maxConcurrent) {
      throw new StreamError(id, H2_ERROR.REFUSED_STREAM, "too many concurrent streams");
    }
    return true;
  }
}
