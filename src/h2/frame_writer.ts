/**
 * The write side of an HTTP/2 connection: control frames first, then one
 * frame per ready stream in turn (round robin), DATA only within both flow
 * windows, gathered into one reused buffer and written by a single loop.
 * Queued DATA is never copied before this point; header blocks given as
 * fields are encoded here, in wire order, so the HPACK dynamic table of
 * both ends stays in step.
 *
 * @module
 */

import type { SendFlow } from "./_send_flow.ts";
import type { StreamStore } from "./_stream_store.ts";
import { FLAG, FRAME_HEADER_BYTES, FRAME_TYPE, writeFrameHeader } from "./frames.ts";
import type { HeaderField, HpackEncoder } from "./hpack.ts";
import type { Settings } from "./settings.ts";
import type { Http2Stream, OutboundItem, TwoPartPayload } from "./stream.ts";

/**
 * Write buffers by size, each with a pool shared by every connection: a
 * connection holds one only while it writes, so idle watchers pin none, and
 * the pools keep a fan-out or a round of listings from making a buffer per
 * loop (BENCHMARKS.md, "Design figures", has the measurements).
 * - The usual one, for many small messages (watch events, small responses):
 *   watchers syncing at once each hold one, so its size is multiplied by them.
 * - The large one, only for a loop that starts with one body of at least
 *   `LARGE_BODY_BYTES` (a large ListPods): fewer socket writes; no larger
 *   than a UNIX socket's default send buffer, past which a write is partial.
 *   A watcher's backlog of small events never takes it, which keeps a
 *   fan-out's memory down.
 * - The small one, for a loop with little to write (a live event, a control
 *   frame): after each relist every watcher's connection writes at once.
 */
const WRITE_BUFFER_BYTES = 16 * 1024;
const SPARE_BUFFERS: Uint8Array<ArrayBuffer>[] = [];
const MAX_SPARE_BUFFERS = 128;
const LARGE_WRITE_BUFFER_BYTES = 128 * 1024;
const LARGE_BODY_BYTES = 64 * 1024;
const SPARE_LARGE_BUFFERS: Uint8Array<ArrayBuffer>[] = [];
/** One per client listing at once, for a few. */
const MAX_SPARE_LARGE_BUFFERS = 8;
const SMALL_WRITE_BUFFER_BYTES = 4 * 1024;
const SPARE_SMALL_BUFFERS: Uint8Array<ArrayBuffer>[] = [];
const MAX_SPARE_SMALL_BUFFERS = 128;
/** What a loop may need beyond the queued payload per ready stream: frame headers, trailers. */
const PER_STREAM_SLACK_BYTES = 64;
const NO_BUFFER = new Uint8Array(0);
/** DATA frames this side writes are at most this big, whatever the peer allows. */
const MAX_DATA_FRAME = 64 * 1024;

/** Gathers and writes a connection's frames. */
export class FrameWriter {
  /** When set, only control frames go out (the connection is closing). */
  controlOnly = false;
  readonly #conn: Deno.Conn;
  readonly #encoder: HpackEncoder;
  readonly #peer: Readonly<Settings>;
  readonly #flow: SendFlow;
  readonly #writeFailed: () => void;
  /**
   * Streams with frames to write, in round-robin order; a stream's
   * `inWriteLine` says whether it is here. An array, not a Set: a Set that
   * took a stream in and out per request kept requests alive into the old
   * generation (see `StreamTable`, `_stream_table.ts`).
   */
  readonly #ready: Http2Stream[] = [];
  #control: Uint8Array[] = [];
  #controlBytes = 0;
  /** The write buffer while the write loop runs; empty between loops. */
  #out = NO_BUFFER;
  #writing = false;
  /** Made only when someone waits for the loop to end (closing), not on every write. */
  #idle: PromiseWithResolvers<void> | undefined;

  /**
   * @param conn The socket.
   * @param encoder The connection's HPACK encoder.
   * @param peer The peer's settings, as they change (its SETTINGS_MAX_FRAME_SIZE).
   * @param flow The send windows DATA is written within.
   * @param writeFailed Called when a write failed: the peer is gone.
   */
  constructor(
    conn: Deno.Conn,
    encoder: HpackEncoder,
    peer: Readonly<Settings>,
    flow: SendFlow,
    writeFailed: () => void,
  ) {
    this.#conn = conn;
    this.#encoder = encoder;
    this.#peer = peer;
    this.#flow = flow;
    this.#writeFailed = writeFailed;
  }

  /** Resolves when nothing is being written. */
  get idle(): Promise<void> {
    if (!this.#writing) return Promise.resolve();
    this.#idle ??= Promise.withResolvers<void>();
    return this.#idle.promise;
  }

  /** Control bytes waiting to be written. */
  get controlBacklog(): number {
    return this.#controlBytes;
  }

  /** @param frame A whole control frame, written before any stream's frames. */
  queueControl(frame: Uint8Array): void {
    this.#control.push(frame);
    this.#controlBytes += frame.byteLength;
    this.kick();
  }

  /** Drops every queued control frame. */
  clearControl(): void {
    this.#control = [];
    this.#controlBytes = 0;
  }

  /** @param stream A stream with frames to write. */
  schedule(stream: Http2Stream): void {
    this.#enter(stream);
    this.kick();
  }

  /** A send window grew: every stream with frames waiting goes back in the line. */
  resume(streams: StreamStore): void {
    streams.forEach(this.#requeue);
    this.kick();
  }

  /** Allocated once: `resume` runs per connection WINDOW_UPDATE. */
  readonly #requeue = (stream: Http2Stream): void => {
    if (stream.peek() !== undefined) this.#enter(stream);
  };

  /** @param stream A stream to leave out until scheduled again. */
  unschedule(stream: Http2Stream): void {
    this.#leave(stream);
  }

  /** Forgets every stream waiting to write. */
  clearStreams(): void {
    for (const stream of this.#ready) stream.inWriteLine = false;
    this.#ready.length = 0;
  }

  /** Puts a stream at the back of the line, unless it is in it. */
  #enter(stream: Http2Stream): void {
    if (stream.inWriteLine) return;
    stream.inWriteLine = true;
    this.#ready.push(stream);
  }

  /** Takes a stream out of the line, if it is in it. */
  #leave(stream: Http2Stream): void {
    if (!stream.inWriteLine) return;
    stream.inWriteLine = false;
    const at = this.#ready.indexOf(stream);
    if (at >= 0) this.#ready.splice(at, 1);
  }

  /** Starts the write loop unless it runs. */
  kick(): void {
    if (this.#writing) return;
    this.#writing = true;
    queueMicrotask(() => this.#loop());
  }

  async #loop(): Promise<void> {
    this.#out = this.#takeBuffer();
    try {
      for (;;) {
        const n = this.#fill();
        if (n === 0) break;
        let offset = 0;
        while (offset < n) offset += await this.#conn.write(this.#out.subarray(offset, n));
        // More is coming than a small buffer is for (a flood of PING answers,
        // a backlog that grew while it wrote): go on with the usual one.
        if (this.#out.byteLength === SMALL_WRITE_BUFFER_BYTES && n > SMALL_WRITE_BUFFER_BYTES / 2) {
          this.#giveBack(this.#out);
          this.#out = SPARE_BUFFERS.pop() ?? new Uint8Array(WRITE_BUFFER_BYTES);
        }
      }
    } catch {
      // The peer is gone; the read side sees it too.
      this.#writeFailed();
    } finally {
      this.#giveBack(this.#out);
      this.#out = NO_BUFFER;
      this.#writing = false;
      this.#idle?.resolve();
      this.#idle = undefined;
    }
  }

  /** Puts a buffer no write holds any more back in its pool, if there is room. */
  #giveBack(buffer: Uint8Array<ArrayBuffer>): void {
    const size = buffer.byteLength;
    if (size === WRITE_BUFFER_BYTES && SPARE_BUFFERS.length < MAX_SPARE_BUFFERS) {
      SPARE_BUFFERS.push(buffer);
    } else if (
      size === SMALL_WRITE_BUFFER_BYTES && SPARE_SMALL_BUFFERS.length < MAX_SPARE_SMALL_BUFFERS
    ) {
      SPARE_SMALL_BUFFERS.push(buffer);
    } else if (
      size === LARGE_WRITE_BUFFER_BYTES && SPARE_LARGE_BUFFERS.length < MAX_SPARE_LARGE_BUFFERS
    ) {
      SPARE_LARGE_BUFFERS.push(buffer);
    }
  }

  /**
   * A spare buffer for this loop: the large one when a ready stream's next
   * DATA is one large body, the small one when everything queued fits in it
   * (a wrong guess costs one more write, never a frame), else the usual.
   */
  #takeBuffer(): Uint8Array<ArrayBuffer> {
    let pending = this.#controlBytes;
    for (let i = 0; i < this.#ready.length; i++) {
      const stream = this.#ready[i]!;
      if (stream.nextDataBytes() >= LARGE_BODY_BYTES) {
        return SPARE_LARGE_BUFFERS.pop() ?? new Uint8Array(LARGE_WRITE_BUFFER_BYTES);
      }
      pending += stream.queuedBytes + PER_STREAM_SLACK_BYTES;
    }
    if (pending <= SMALL_WRITE_BUFFER_BYTES) {
      return SPARE_SMALL_BUFFERS.pop() ?? new Uint8Array(SMALL_WRITE_BUFFER_BYTES);
    }
    return SPARE_BUFFERS.pop() ?? new Uint8Array(WRITE_BUFFER_BYTES);
  }

  /** Fills the write buffer: control frames, then one frame per ready stream in turn. */
  #fill(): number {
    let pos = 0;
    while (this.#control.length > 0) {
      const frame = this.#control[0]!;
      if (pos + frame.byteLength > this.#out.byteLength) {
        if (pos > 0) return pos;
        this.#out = new Uint8Array(frame.byteLength);
      }
      this.#out.set(frame, pos);
      pos += frame.byteLength;
      this.#control.shift();
      this.#controlBytes -= frame.byteLength;
    }
    if (this.controlOnly) return pos;
    let progress = true;
    while (progress && pos < this.#out.byteLength - FRAME_HEADER_BYTES) {
      if (this.#ready.length === 1) {
        const before = pos;
        pos = this.#fillFrom(this.#ready[0]!, pos);
        progress = pos !== before;
        continue;
      }
      progress = false;
      // A copy: the loop changes the set.
      for (const stream of this.#ready.slice()) {
        const item = stream.peek();
        if (item === undefined) {
          this.#leave(stream);
          continue;
        }
        const before = pos;
        pos = this.#writeItem(stream, item, pos);
        if (pos === before) {
          if (item.kind === "data" && this.#flow.connectionWindow <= 0) return pos;
          continue;
        }
        progress = true;
        // Round robin: a stream that wrote goes to the back of the line.
        this.#leave(stream);
        if (this.#hasMore(stream)) this.#enter(stream);
        if (pos >= this.#out.byteLength - FRAME_HEADER_BYTES) break;
      }
    }
    return pos;
  }

  /**
   * The one ready stream's frames, in a row, while it is the only one: no
   * round robin to keep, so the set is left alone (a 2 MB body is 128
   * frames). Stops when the buffer is full, the stream has nothing more or
   * is blocked, or another stream became ready.
   *
   * @returns The position after what was written.
   */
  #fillFrom(stream: Http2Stream, pos: number): number {
    while (pos < this.#out.byteLength - FRAME_HEADER_BYTES && this.#ready.length === 1) {
      const item = stream.peek();
      if (item === undefined) {
        this.#leave(stream);
        break;
      }
      const before = pos;
      pos = this.#writeItem(stream, item, pos);
      if (pos === before) break;
      if (!this.#hasMore(stream)) {
        this.#leave(stream);
        break;
      }
    }
    return pos;
  }

  /** One frame (or header block) of a stream's next item; the position after it. */
  #writeItem(stream: Http2Stream, item: OutboundItem, pos: number): number {
    return item.kind === "headers"
      ? this.#writeHeaders(stream, item, pos)
      : this.#writeData(stream, item, pos);
  }

  /** Whether a stream that just wrote stays ready (a stream its connection forgot has nothing queued). */
  #hasMore(stream: Http2Stream): boolean {
    return stream.peek() !== undefined;
  }

  #writeHeaders(
    stream: Http2Stream,
    item: Extract<OutboundItem, { kind: "headers" }>,
    pos: number,
  ): number {
    const maxFrame = this.#peer.maxFrameSize;
    const estimate = item.block?.byteLength ?? estimateBlock(item.fields ?? []);
    const need = estimate + Math.ceil(Math.max(estimate, 1) / maxFrame) * FRAME_HEADER_BYTES;
    if (pos + need > this.#out.byteLength) {
      if (pos > 0) return pos;
      this.#out = new Uint8Array(need);
    }
    const block = item.block ?? this.#encoder.encode(item.fields ?? []);
    let offset = 0;
    let type: number = FRAME_TYPE.HEADERS;
    do {
      const size = Math.min(block.byteLength - offset, maxFrame);
      let flags = offset + size === block.byteLength ? FLAG.END_HEADERS : 0;
      if (type === FRAME_TYPE.HEADERS && item.endStream) flags |= FLAG.END_STREAM;
      writeFrameHeader(this.#out, pos, size, type, flags, stream.id);
      this.#out.set(block.subarray(offset, offset + size), pos + FRAME_HEADER_BYTES);
      pos += FRAME_HEADER_BYTES + size;
      offset += size;
      type = FRAME_TYPE.CONTINUATION;
    } while (offset < block.byteLength);
    stream.wrote(0, true);
    return pos;
  }

  /**
   * One DATA frame of the stream's queued DATA: consecutive items go into
   * the same frame up to its limits, so a message queued as a prefix and a
   * shared body, or a watcher's backlog of small events, costs the peer one
   * frame, not one per item.
   */
  #writeData(
    stream: Http2Stream,
    item: Extract<OutboundItem, { kind: "data" }>,
    pos: number,
  ): number {
    const limit = Math.min(
      this.#flow.available(stream),
      this.#peer.maxFrameSize,
      MAX_DATA_FRAME,
      this.#out.byteLength - pos - FRAME_HEADER_BYTES,
    );
    if (limit <= 0 && item.size > item.offset) {
      // Blocked by the stream's own window: WINDOW_UPDATE schedules it again.
      if (stream.sendWindow <= 0) this.#leave(stream);
      return pos;
    }
    const room = Math.max(limit, 0);
    const body = pos + FRAME_HEADER_BYTES;
    let size = 0;
    let endStream = false;
    let next: OutboundItem | undefined = item;
    while (next?.kind === "data") {
      const chunk = Math.min(next.size - next.offset, room - size);
      copyPayload(this.#out, body + size, next, chunk);
      next.offset += chunk;
      size += chunk;
      const done = next.offset === next.size;
      stream.wrote(chunk, done);
      if (!done) break;
      if (next.endStream) {
        endStream = true;
        break;
      }
      next = size < room ? stream.peek() : undefined;
    }
    const flags = endStream ? FLAG.END_STREAM : 0;
    writeFrameHeader(this.#out, pos, size, FRAME_TYPE.DATA, flags, stream.id);
    this.#flow.consume(stream, size);
    return body + size;
  }
}

/**
 * Copies `chunk` bytes of a DATA item's payload from its offset, across
 * `bytes` then `tail`, or across its parts.
 */
function copyPayload(
  out: Uint8Array,
  at: number,
  item: Extract<OutboundItem, { kind: "data" }>,
  chunk: number,
): void {
  if (item.parts !== undefined) return copyParts(out, at, item, item.parts, chunk);
  const { bytes, tail, offset } = item;
  const fromBytes = Math.min(Math.max(bytes.byteLength - offset, 0), chunk);
  if (fromBytes > 0) copyPiece(out, at, bytes, offset, fromBytes);
  if (fromBytes < chunk) {
    copyPiece(out, at + fromBytes, tail, offset + fromBytes - bytes.byteLength, chunk - fromBytes);
  }
}

/** {@linkcode copyPayload} for a DATA item of parts: from the part it reached, moving it on. */
function copyParts(
  out: Uint8Array,
  at: number,
  item: Extract<OutboundItem, { kind: "data" }>,
  parts: readonly TwoPartPayload[],
  chunk: number,
): void {
  let left = chunk;
  let index = item.part;
  let within = item.partOffset;
  while (left > 0) {
    const { head, tail } = parts[index]!;
    if (within < head.byteLength) {
      const n = Math.min(head.byteLength - within, left);
      copyPiece(out, at, head, within, n);
      at += n;
      left -= n;
      within += n;
    }
    const intoTail = within - head.byteLength;
    if (left > 0 && intoTail < tail.byteLength) {
      const n = Math.min(tail.byteLength - intoTail, left);
      copyPiece(out, at, tail, intoTail, n);
      at += n;
      left -= n;
      within += n;
    }
    if (within === head.byteLength + tail.byteLength) {
      index++;
      within = 0;
    }
  }
  item.part = index;
  item.partOffset = within;
}

/**
 * Copies `n` bytes of `piece` from `from`. A whole piece is copied as it is:
 * a view per piece was most of the writer's garbage when a watcher's backlog
 * of small events went out.
 */
function copyPiece(out: Uint8Array, at: number, piece: Uint8Array, from: number, n: number): void {
  if (from === 0 && n === piece.byteLength) out.set(piece, at);
  else out.set(piece.subarray(from, from + n), at);
}

/** An upper bound of a header block's encoded size. */
function estimateBlock(fields: readonly HeaderField[]): number {
  let size = 8;
  for (const [name, value] of fields) size += name.length + value.length + 12;
  return size;
}
