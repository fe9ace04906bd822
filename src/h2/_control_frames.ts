/**
 * The connection-level frames of HTTP/2 (RFC 9113 section 6): SETTINGS,
 * PING, GOAWAY and WINDOW_UPDATE, checked and applied. The connection owns
 * the streams and the writer; this module owns what these frames change:
 * whether the peer's first SETTINGS came, whether it said GOAWAY, and the
 * rate at which it may ask for answers (PING, SETTINGS).
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import { TokenBucket } from "../ratelimit/mod.ts";
import type { ReadonlyStreamTable } from "./_stream_table.ts";
import type { ConnectionRole } from "./connection_options.ts";
import { ConnectionError, H2_ERROR, StreamError } from "./errors.ts";
import type { FlowWindow } from "./flow_window.ts";
import { FLAG, type FrameHeader, pingFrame, readUint31, SETTINGS_ACK } from "./frames.ts";
import type { HpackEncoder } from "./hpack.ts";
import { applySettings, type Settings } from "./settings.ts";
import type { Http2Stream } from "./stream.ts";

/** What the control frames read and act on in their connection. */
export interface ControlFrameHost {
  readonly role: ConnectionRole;
  /** The peer's settings, updated in place. */
  readonly peer: Settings;
  /** Our HPACK encoder: its table follows the peer's SETTINGS_HEADER_TABLE_SIZE. */
  readonly encoder: HpackEncoder;
  /** What this side may still send on the connection. */
  readonly sendWindow: FlowWindow;
  /** The open streams. */
  readonly streams: ReadonlyStreamTable<Http2Stream>;
  /** Whether a stream ID has not been opened yet. */
  isIdle(streamId: number): boolean;
  /** Hands a stream with frames to the writer (its window grew). */
  queueStream(stream: Http2Stream): void;
  /** Same, unless the connection is closing (the connection's own `schedule`). */
  schedule(stream: Http2Stream): void;
  /** Queues a connection-level frame. */
  queueControl(frame: Uint8Array): void;
  /** Wakes the writer. */
  kick(): void;
  /** Ends a stream without a frame (the peer will not process it). */
  forget(stream: Http2Stream, code: number): void;
  /** Closes the connection when no stream is left and it is leaving. */
  closeIfDrained(): void;
  /** The peer answered one of our PINGs. */
  pingAcked(payload: Uint8Array): void;
}

/** Applies the connection-level frames of one connection. */
export class ControlFrames {
  readonly #host: ControlFrameHost;
  readonly #bucket: TokenBucket;
  #settingsSeen = false;
  #goawayReceived = false;
  /** Schedules a stream that has frames waiting (once the connection window grew). */
  readonly #requeue = (stream: Http2Stream): void => {
    if (stream.peek() !== undefined) this.#host.queueStream(stream);
  };

  /**
   * @param host The connection.
   * @param rate PING and SETTINGS frames the peer may send: per second, and in a burst.
   * @param clock Refills the rate limit.
   */
  constructor(host: ControlFrameHost, rate: { qps: number; burst: number }, clock: Clock) {
    this.#host = host;
    this.#bucket = new TokenBucket({ ...rate, clock });
  }

  /** The peer's first SETTINGS has arrived (it must be its first frame). */
  get settingsSeen(): boolean {
    return this.#settingsSeen;
  }

  /** The peer sent GOAWAY: this side opens no new stream. */
  get goawayReceived(): boolean {
    return this.#goawayReceived;
  }

  /**
   * SETTINGS: applied, window changes passed to every stream, then ACKed.
   *
   * @param h The frame header.
   * @param payload Its payload.
   * @throws {ConnectionError} For a malformed or too frequent frame, or a window past 2^31-1.
   */
  onSettings(h: FrameHeader, payload: Uint8Array): void {
    const host = this.#host;
    if (h.streamId !== 0) {
      throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "SETTINGS on a stream");
    }
    if (h.flags & FLAG.ACK) {
      if (h.length !== 0) {
        throw new ConnectionError(H2_ERROR.FRAME_SIZE_ERROR, "SETTINGS ACK with a payload");
      }
      return;
    }
    if (h.length % 6 !== 0) {
      throw new ConnectionError(H2_ERROR.FRAME_SIZE_ERROR, "SETTINGS length not a multiple of 6");
    }
    if (this.#settingsSeen && !this.#bucket.tryTake()) {
      throw new ConnectionError(H2_ERROR.ENHANCE_YOUR_CALM, "too many SETTINGS frames");
    }
    this.#settingsSeen = true;
    const delta = applySettings(host.peer, payload);
    if (delta !== 0) {
      for (const stream of host.streams.values()) {
        if (!stream.sendWindow.grow(delta)) {
          throw new ConnectionError(H2_ERROR.FLOW_CONTROL_ERROR, "a stream window passed 2^31-1");
        }
        if (delta > 0 && stream.peek() !== undefined) host.queueStream(stream);
      }
    }
    host.encoder.setMaxTableSize(Math.min(host.peer.headerTableSize, 4096));
    host.queueControl(SETTINGS_ACK);
    host.kick();
  }

  /**
   * PING: answered, or (an ACK) passed to the connection.
   *
   * @param h The frame header.
   * @param payload Its payload.
   * @throws {ConnectionError} For a malformed or too frequent PING.
   */
  onPing(h: FrameHeader, payload: Uint8Array): void {
    if (h.streamId !== 0) throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "PING on a stream");
    if (h.length !== 8) throw new ConnectionError(H2_ERROR.FRAME_SIZE_ERROR, "PING is not 8 bytes");
    if (h.flags & FLAG.ACK) {
      this.#host.pingAcked(payload);
      return;
    }
    if (!this.#bucket.tryTake()) {
      throw new ConnectionError(H2_ERROR.ENHANCE_YOUR_CALM, "too many PING frames");
    }
    this.#host.queueControl(pingFrame(payload.slice(), true));
  }

  /**
   * GOAWAY: streams this side opened above the peer's last ID are refused
   * (retry elsewhere); the connection closes once the rest are done.
   *
   * @param h The frame header.
   * @param payload Its payload.
   * @throws {ConnectionError} For a malformed GOAWAY.
   */
  onGoaway(h: FrameHeader, payload: Uint8Array): void {
    const host = this.#host;
    if (h.streamId !== 0) throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "GOAWAY on a stream");
    if (h.length < 8) {
      throw new ConnectionError(H2_ERROR.FRAME_SIZE_ERROR, "GOAWAY shorter than 8 bytes");
    }
    this.#goawayReceived = true;
    const lastId = readUint31(payload, 0);
    for (const stream of host.streams.values()) {
      // Streams this side opened that the peer will not process: retry elsewhere.
      const local = (stream.id % 2 === 1) === (host.role === "client");
      if (local && stream.id > lastId) host.forget(stream, H2_ERROR.REFUSED_STREAM);
    }
    host.closeIfDrained();
  }

  /**
   * WINDOW_UPDATE, of the connection or of one stream: the window grows and
   * the streams it held back are scheduled.
   *
   * @param h The frame header.
   * @param payload Its payload.
   * @throws {ConnectionError} For a malformed update or a connection window past 2^31-1.
   * @throws {StreamError} For a zero increment or a stream window past 2^31-1.
   */
  onWindowUpdate(h: FrameHeader, payload: Uint8Array): void {
    const host = this.#host;
    if (h.length !== 4) {
      throw new ConnectionError(H2_ERROR.FRAME_SIZE_ERROR, "WINDOW_UPDATE is not 4 bytes");
    }
    const increment = readUint31(payload, 0);
    if (h.streamId === 0) {
      if (increment === 0) {
        throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, "WINDOW_UPDATE of 0 on the connection");
      }
      if (!host.sendWindow.grow(increment)) {
        throw new ConnectionError(
          H2_ERROR.FLOW_CONTROL_ERROR,
          "the connection window passed 2^31-1",
        );
      }
      host.streams.forEach(this.#requeue);
      host.kick();
      return;
    }
    const stream = host.streams.get(h.streamId);
    if (stream === undefined) {
      if (host.isIdle(h.streamId)) {
        throw new ConnectionError(
          H2_ERROR.PROTOCOL_ERROR,
          `WINDOW_UPDATE on idle stream ${h.streamId}`,
        );
      }
      return;
    }
    if (increment === 0) {
      throw new StreamError(h.streamId, H2_ERROR.PROTOCOL_ERROR, "WINDOW_UPDATE of 0");
    }
    if (!stream.sendWindow.grow(increment)) {
      throw new StreamError(
        h.streamId,
        H2_ERROR.FLOW_CONTROL_ERROR,
        "the stream window passed 2^31-1",
      );
    }
    if (stream.peek() !== undefined) host.schedule(stream);
  }
}
