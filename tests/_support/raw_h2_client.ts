/**
 * A raw HTTP/2 client for tests: it writes exactly the frames a test builds
 * (with src/h2/frames.ts and an HpackEncoder) and reads what the peer sends
 * back frame by frame, so a test can play a well-behaved or a hostile client
 * against a server-role Http2Connection over a real socket.
 *
 * @module
 */

import { concatBytes } from "../../src/bytes_concat.ts";
import {
  buildFrame,
  CLIENT_PREFACE,
  FLAG,
  FRAME_HEADER_BYTES,
  FRAME_TYPE,
  readFrameHeader,
  readUint31,
  readUint32,
  settingsFrame,
} from "../../src/h2/frames.ts";
import { type HeaderField, HpackDecoder, HpackEncoder } from "../../src/h2/hpack.ts";
import { pollUntil } from "./poll.ts";

const READ_BYTES = 64 * 1024;

/** One frame as read off the wire. */
export interface Frame {
  readonly type: number;
  readonly flags: number;
  readonly streamId: number;
  readonly payload: Uint8Array;
}

/** A GOAWAY's fields. */
export interface Goaway {
  readonly lastStreamId: number;
  readonly code: number;
  readonly debug: string;
}

/** The request headers of a gRPC call. */
export function grpcRequestFields(
  path: string,
  extra: readonly HeaderField[] = [],
): HeaderField[] {
  return [
    [":method", "POST"],
    [":scheme", "http"],
    [":path", path],
    [":authority", "localhost"],
    ["content-type", "application/grpc"],
    ["te", "trailers"],
    ...extra,
  ];
}

/**
 * @param frame A GOAWAY frame.
 * @returns Its fields.
 */
export function parseGoaway(frame: Frame): Goaway {
  return {
    lastStreamId: readUint31(frame.payload, 0),
    code: readUint32(frame.payload, 4),
    debug: new TextDecoder().decode(frame.payload.subarray(8)),
  };
}

/**
 * @param frame A RST_STREAM or WINDOW_UPDATE frame.
 * @returns The 32-bit number it carries (the code, or the increment).
 */
export function frameNumber(frame: Frame): number {
  return readUint32(frame.payload, 0);
}

/** A raw HTTP/2 client on a unix socket. */
export class RawClient implements AsyncDisposable {
  readonly conn: Deno.Conn;
  readonly encoder: HpackEncoder = new HpackEncoder();
  readonly decoder: HpackDecoder = new HpackDecoder();
  #buf: Uint8Array = new Uint8Array(0);
  #start = 0;
  #end = 0;
  #eof = false;
  #closed = false;

  constructor(conn: Deno.Conn) {
    this.conn = conn;
  }

  /**
   * @param path A unix socket.
   * @returns A client connected to it (nothing written yet).
   */
  static async connect(path: string): Promise<RawClient> {
    return new RawClient(await Deno.connect({ transport: "unix", path }));
  }

  /** Whether the peer closed its side. */
  get eof(): boolean {
    return this.#eof;
  }

  /**
   * Writes bytes whole.
   *
   * @param parts Frames or raw bytes, written in order.
   */
  async write(...parts: Uint8Array[]): Promise<void> {
    const bytes = parts.length === 1 ? parts[0]! : concatBytes(parts);
    let offset = 0;
    while (offset < bytes.byteLength) offset += await this.conn.write(bytes.subarray(offset));
  }

  /**
   * Writes the preface and a SETTINGS frame, then reads until the server's
   * SETTINGS arrived, acknowledging it.
   *
   * @param settings Our SETTINGS entries.
   * @returns The server's SETTINGS entries.
   */
  async handshake(
    settings: readonly (readonly [number, number])[] = [],
  ): Promise<Map<number, number>> {
    await this.write(CLIENT_PREFACE, settingsFrame(settings));
    const frame = await this.next((f) => f.type === FRAME_TYPE.SETTINGS && !(f.flags & FLAG.ACK));
    if (frame === undefined) throw new Error("The server closed before its SETTINGS");
    await this.write(buildFrame(FRAME_TYPE.SETTINGS, FLAG.ACK, 0));
    const entries = new Map<number, number>();
    for (let i = 0; i + 6 <= frame.payload.byteLength; i += 6) {
      entries.set(
        (frame.payload[i]! << 8) | frame.payload[i + 1]!,
        readUint32(frame.payload, i + 2),
      );
    }
    return entries;
  }

  /**
   * Builds a HEADERS frame with END_HEADERS from fields, through this client's encoder.
   *
   * @param streamId The stream.
   * @param fields The header list.
   * @param endStream Whether to set END_STREAM.
   * @returns The frame.
   */
  headers(streamId: number, fields: readonly HeaderField[], endStream: boolean): Uint8Array {
    const flags = FLAG.END_HEADERS | (endStream ? FLAG.END_STREAM : 0);
    return buildFrame(FRAME_TYPE.HEADERS, flags, streamId, this.encoder.encode(fields));
  }

  /**
   * Decodes a HEADERS frame's block (no padding or priority, as our server sends).
   *
   * @param frame A HEADERS frame with END_HEADERS.
   * @returns Its fields.
   */
  decodeHeaders(frame: Frame): HeaderField[] {
    return this.decoder.decode(frame.payload).headers;
  }

  /**
   * Reads one frame.
   *
   * @returns The frame, or `undefined` once the peer closed the connection.
   */
  async readFrame(): Promise<Frame | undefined> {
    for (;;) {
      const have = this.#end - this.#start;
      if (have >= FRAME_HEADER_BYTES) {
        const h = readFrameHeader(this.#buf, this.#start);
        const end = this.#start + FRAME_HEADER_BYTES + h.length;
        if (this.#end >= end) {
          const payload = this.#buf.slice(this.#start + FRAME_HEADER_BYTES, end);
          this.#start = end;
          return { type: h.type, flags: h.flags, streamId: h.streamId, payload };
        }
      }
      if (this.#eof) return undefined;
      if (this.#buf.byteLength - this.#end < READ_BYTES) {
        // Compact, growing only when what is buffered needs it.
        const next = new Uint8Array(Math.max(this.#buf.byteLength, (have + READ_BYTES) * 2));
        next.set(this.#buf.subarray(this.#start, this.#end));
        this.#buf = next;
        this.#start = 0;
        this.#end = have;
      }
      let n: number | null;
      try {
        n = await this.conn.read(this.#buf.subarray(this.#end, this.#end + READ_BYTES));
      } catch {
        n = null; // reset by the peer: the same as its close here
      }
      if (n === null) this.#eof = true;
      else this.#end += n;
    }
  }

  /**
   * Reads frames until one matches.
   *
   * @param match The frame looked for.
   * @param seen Receives every frame read, the match included.
   * @returns The frame, or `undefined` when the peer closed first.
   */
  async next(match: (f: Frame) => boolean, seen?: Frame[]): Promise<Frame | undefined> {
    for (;;) {
      const frame = await this.readFrame();
      if (frame === undefined) return undefined;
      seen?.push(frame);
      if (match(frame)) return frame;
    }
  }

  /**
   * Reads until the peer closes.
   *
   * @returns Every frame read.
   */
  async readToEnd(): Promise<Frame[]> {
    const frames: Frame[] = [];
    await this.next(() => false, frames);
    return frames;
  }

  /**
   * Reads until the peer closes and returns its GOAWAY.
   *
   * @returns The last GOAWAY, or `undefined` when there was none.
   */
  async goawayThenClose(): Promise<Goaway | undefined> {
    const goaways = (await this.readToEnd()).filter((f) => f.type === FRAME_TYPE.GOAWAY);
    const last = goaways.at(-1);
    return last === undefined ? undefined : parseGoaway(last);
  }

  /** Closes the socket (once). */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    try {
      this.conn.close();
    } catch {
      // already closed
    }
  }

  [Symbol.asyncDispose](): Promise<void> {
    this.close();
    return Promise.resolve();
  }
}

/**
 * Polls until `condition` holds: a guard against hanging, not a timing
 * assertion (the limit is far above any expected wait).
 *
 * @param condition What to wait for.
 * @param what Named in the failure.
 */
export function waitFor(condition: () => boolean, what: string): Promise<void> {
  return pollUntil(condition, what, 10_000);
}

/**
 * Waits until a counter stops moving: `turns` polls in a row without change.
 * Used where a test shows that a writer is stuck; the assertions that follow
 * hold whether or not it is, so a slow machine makes the test weaker, never
 * flaky.
 *
 * @param read The counter.
 * @param turns Polls without change.
 */
export async function settled(read: () => number, turns = 10): Promise<void> {
  let last = read();
  let still = 0;
  for (let i = 0; i < 2000 && still < turns; i++) {
    await new Promise((r) => setTimeout(r, 10));
    const now = read();
    still = now === last ? still + 1 : 0;
    last = now;
  }
}
