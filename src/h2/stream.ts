/**
 * One HTTP/2 stream (RFC 9113 section 5.1): its state, its two flow-control
 * windows, the frames it has queued to send, and the callbacks through which
 * the layer above receives what the peer sent.
 *
 * @module
 */

import type { HeaderField } from "./hpack.ts";

/** What the layer above hears from a stream. Callbacks run synchronously inside the read loop. */
export interface StreamListener {
  /** A header block arrived: the request or response headers, or trailers. */
  onHeaders?(fields: HeaderField[], endStream: boolean): void;
  /** DATA arrived. `chunk` is only valid during the call: copy what you keep. */
  onData?(chunk: Uint8Array, endStream: boolean): void;
  /**
   * The stream is over. `code` is the RST_STREAM code when either side
   * reset it or the connection went away; `undefined` after a normal end.
   */
  onClose?(code: number | undefined): void;
}

/** The listener of a stream nobody listens to yet. */
const NO_LISTENER: StreamListener = Object.freeze({});

/** An item a stream waits to write, in order. */
export type OutboundItem =
  | {
    readonly kind: "headers";
    /** Encoded at write time, in wire order, when `block` is not given. */
    readonly fields?: readonly HeaderField[];
    /** A block encoded without the dynamic table, so valid on any connection. */
    readonly block?: Uint8Array;
    readonly endStream: boolean;
  }
  | {
    readonly kind: "data";
    readonly bytes: Uint8Array;
    /** More payload after `bytes`, held elsewhere too (a cached pod's encoding); often empty. */
    readonly tail: Uint8Array;
    /**
     * Or, when `bytes` and `tail` are empty: payloads written one after the
     * other, each its `head` then its `tail` (a watcher's batch of events).
     */
    readonly parts: readonly TwoPartPayload[] | undefined;
    /** The part being written and how far into it (`parts` only). */
    part: number;
    partOffset: number;
    /** The whole payload. */
    readonly size: number;
    /** Payload bytes already written, across `bytes` then `tail` (or the parts). */
    offset: number;
    readonly endStream: boolean;
  };

/** A payload in two pieces, written `head` then `tail` (a framed message and a shared body). */
export interface TwoPartPayload {
  readonly head: Uint8Array;
  readonly tail: Uint8Array;
}

const NO_BYTES = new Uint8Array(0);

/** What a stream needs from its connection. */
export interface StreamHost {
  /** The stream has something to write. */
  schedule(stream: Http2Stream): void;
  /** Resets the stream on the wire and forgets it. */
  resetStream(stream: Http2Stream, code: number): void;
  /** The layer above consumed `bytes` of DATA on this stream: reopen the window. */
  released(stream: Http2Stream, bytes: number): void;
  /** This side's END_STREAM went into the write buffer. */
  localEnded(stream: Http2Stream): void;
}

/** Stream states that matter once a stream exists (idle and reserved are never stored). */
export type StreamState = "open" | "halfClosedLocal" | "halfClosedRemote" | "closed";

interface DrainWaiter {
  readonly limit: number;
  readonly resolve: () => void;
}

/** An open HTTP/2 stream. */
export class Http2Stream {
  /** The stream id. */
  readonly id: number;
  /** Bytes this side may still send on the stream; may go negative (changed by `SendFlow` only). */
  sendWindow: number;
  /** Bytes the peer may still send before this side opens the window again (changed by `Receiver` only). */
  recvWindow: number;
  /** DATA bytes consumed and not yet given back to the peer in a WINDOW_UPDATE (`Receiver`'s count). */
  recvUnacked = 0;
  /** Header blocks received so far (1: headers, 2: trailers). */
  headerBlocks = 0;
  /** The request's or response's `content-length`, checked against DATA (RFC 9113 section 8.1.1). */
  contentLength: number | undefined;
  /** DATA payload bytes received (padding excluded). */
  dataReceived = 0;
  /** Where received frames go. */
  listener: StreamListener = NO_LISTENER;
  /** Whether its connection's frame writer holds it among the streams ready to write (the writer's mark). */
  inWriteLine = false;
  #state: StreamState;
  /**
   * Items to write: `#queue[#head]` is the next. Taken items are cleared and
   * the array compacted now and then: `shift()` costs a copy of the rest
   * once the queue is long, and a watcher syncing 1000 pods queues hundreds
   * of items (it was a sixth of the daemon's CPU in that fan-out).
   */
  #queue: (OutboundItem | undefined)[] = [];
  #head = 0;
  #queuedBytes = 0;
  #waiters: DrainWaiter[] = [];
  #host: StreamHost;
  #closeCode: number | undefined;
  #closed = false;

  /**
   * @param id The stream id.
   * @param host The connection.
   * @param sendWindow The peer's initial window.
   * @param recvWindow This side's initial window.
   */
  constructor(id: number, host: StreamHost, sendWindow: number, recvWindow: number) {
    this.id = id;
    this.#host = host;
    this.sendWindow = sendWindow;
    this.recvWindow = recvWindow;
    this.#state = "open";
  }

  /** The state per RFC 9113 section 5.1. */
  get state(): StreamState {
    return this.#state;
  }

  /** Whether the peer may still send DATA or trailers. */
  get remoteOpen(): boolean {
    return this.#state === "open" || this.#state === "halfClosedLocal";
  }

  /** Whether this side may still queue frames. */
  get localOpen(): boolean {
    return !this.#closed && (this.#state === "open" || this.#state === "halfClosedRemote") &&
      !this.#endQueued;
  }

  #endQueued = false;
  #headersWritten = false;

  /** Whether this side's first header block is on the wire (before it, the peer has not seen the stream). */
  get headersWritten(): boolean {
    return this.#headersWritten;
  }

  /** Payload bytes queued and not yet written. */
  get queuedBytes(): number {
    return this.#queuedBytes;
  }

  /** The RST_STREAM code that ended the stream, if one did. */
  get closeCode(): number | undefined {
    return this.#closeCode;
  }

  /**
   * Queues a header block (headers, or trailers with `endStream`).
   *
   * @param item The fields, or a block encoded without the dynamic table.
   * @returns `false` when the stream can no longer send.
   */
  sendHeaders(
    item: { fields?: readonly HeaderField[]; block?: Uint8Array },
    endStream: boolean,
  ): boolean {
    if (!this.localOpen) return false;
    // One shape for every headers item (a spread made one per caller's shape).
    this.#queue.push({ kind: "headers", fields: item.fields, block: item.block, endStream });
    if (endStream) this.#endQueued = true;
    this.#host.schedule(this);
    return true;
  }

  /**
   * Queues DATA. The bytes are not copied: keep them unchanged until written.
   *
   * @param bytes The payload.
   * @param endStream Whether this ends the stream.
   * @param tail More payload, written right after `bytes` (one item, not two).
   * @returns `false` when the stream can no longer send.
   */
  sendData(bytes: Uint8Array, endStream: boolean, tail: Uint8Array = NO_BYTES): boolean {
    if (!this.localOpen) return false;
    const size = bytes.byteLength + tail.byteLength;
    this.#queue.push({
      kind: "data",
      bytes,
      tail,
      parts: undefined,
      part: 0,
      partOffset: 0,
      size,
      offset: 0,
      endStream,
    });
    this.#queuedBytes += size;
    if (endStream) this.#endQueued = true;
    this.#host.schedule(this);
    return true;
  }

  /**
   * Queues payloads as one DATA item, in order: a batch of messages costs
   * one queued item, not one each (a watcher's initial list is queued at
   * once and waits while other watchers write, so an item per message
   * lived long enough to be promoted to V8's old generation). Not copied:
   * keep them unchanged until written.
   *
   * @param parts The payloads.
   * @returns `false` when the stream can no longer send.
   */
  sendParts(parts: readonly TwoPartPayload[]): boolean {
    if (!this.localOpen) return false;
    let size = 0;
    // Indexed: no iterator result per part (this runs once per watcher's batch).
    for (let i = 0; i < parts.length; i++) {
      size += parts[i]!.head.byteLength + parts[i]!.tail.byteLength;
    }
    if (size === 0) return true;
    this.#queue.push({
      kind: "data",
      bytes: NO_BYTES,
      tail: NO_BYTES,
      parts,
      part: 0,
      partOffset: 0,
      size,
      offset: 0,
      endStream: false,
    });
    this.#queuedBytes += size;
    this.#host.schedule(this);
    return true;
  }

  /**
   * Waits until at most `limit` payload bytes are queued, or the stream ends.
   *
   * @param limit The backlog to wait for.
   * @returns Resolves then; `undefined` when that is already so (a watcher
   *   sending its backlog then goes on without a turn of the event loop).
   */
  drained(limit: number): Promise<void> | undefined {
    if (this.#queuedBytes <= limit || this.#closed) return undefined;
    return new Promise((resolve) => this.#waiters.push({ limit, resolve }));
  }

  /**
   * Drops queued DATA that has not started to go out (the stream is ending
   * with an error and its reader is not reading).
   */
  discardUnsentData(): void {
    const waiting = this.#queue.slice(this.#head) as OutboundItem[];
    this.#queue = waiting.filter((item) => {
      if (item.kind !== "data" || item.offset > 0) return true;
      this.#queuedBytes -= item.size;
      return false;
    });
    this.#head = 0;
    this.#wakeWaiters();
  }

  /**
   * Resets the stream: RST_STREAM goes out, queued frames are dropped.
   *
   * @param code The RST_STREAM code.
   */
  reset(code: number): void {
    if (this.#closed) return;
    this.#host.resetStream(this, code);
  }

  /**
   * Tells the connection the layer above is done with `bytes` of received
   * DATA, so the peer may send that much more.
   *
   * @param bytes Payload bytes consumed.
   */
  release(bytes: number): void {
    if (!this.#closed && bytes > 0) this.#host.released(this, bytes);
  }

  /** @returns The next item to write, if any. */
  peek(): OutboundItem | undefined {
    return this.#queue[this.#head];
  }

  /**
   * @returns The unwritten bytes of the next DATA body (past any headers
   *   before it), or 0: of an item of parts, its current part only (a batch
   *   of small messages is not one large body).
   */
  nextDataBytes(): number {
    for (let i = this.#head; i < this.#queue.length; i++) {
      const item = this.#queue[i]!;
      if (item.kind !== "data") continue;
      if (item.parts === undefined) return item.size - item.offset;
      const part = item.parts[item.part]!;
      return part.head.byteLength + part.tail.byteLength - item.partOffset;
    }
    return 0;
  }

  /**
   * Records that the first item went out (whole, or `bytes` of its DATA).
   *
   * @param bytes DATA payload bytes written; 0 for headers.
   * @param done Whether the item is complete.
   */
  wrote(bytes: number, done: boolean): void {
    this.#queuedBytes -= bytes;
    if (done) {
      const item = this.#queue[this.#head]!;
      this.#queue[this.#head++] = undefined;
      if (this.#head === this.#queue.length) {
        this.#queue.length = 0;
        this.#head = 0;
      } else if (this.#head >= 64 && this.#head * 2 >= this.#queue.length) {
        this.#queue.splice(0, this.#head);
        this.#head = 0;
      }
      if (item.kind === "headers") this.#headersWritten = true;
      if (item.endStream) {
        this.#state = this.#state === "open" ? "halfClosedLocal" : "closed";
        this.#host.localEnded(this);
      }
    }
    this.#wakeWaiters();
  }

  /** The peer ended its side (END_STREAM received). */
  remoteEnded(): void {
    this.#state = this.#state === "open" ? "halfClosedRemote" : "closed";
  }

  /**
   * Marks the stream over and tells the listener (the connection calls this).
   *
   * @param code The reset code, or `undefined` for a normal end.
   */
  finish(code: number | undefined): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#closeCode = code;
    this.#state = "closed";
    this.#queue = [];
    this.#head = 0;
    this.#queuedBytes = 0;
    this.#wakeWaiters();
    this.listener.onClose?.(code);
  }

  #wakeWaiters(): void {
    if (this.#waiters.length === 0 || !this.#closed && !this.#anyWaiterDrained()) return;
    const still: DrainWaiter[] = [];
    for (const waiter of this.#waiters) {
      if (this.#closed || this.#queuedBytes <= waiter.limit) waiter.resolve();
      else still.push(waiter);
    }
    this.#waiters = still;
  }

  /** Called per item written: allocates nothing while every waiter still waits. */
  #anyWaiterDrained(): boolean {
    for (let i = 0; i < this.#waiters.length; i++) {
      if (this.#queuedBytes <= this.#waiters[i]!.limit) return true;
    }
    return false;
  }
}
