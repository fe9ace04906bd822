/**
 * The life of one HTTP/2 connection, as one {@linkcode LifeState}: open,
 * going away on either side's GOAWAY (two-phase on our shutdown), flushing
 * its last frames, closed. This type owns that state, its timers and the
 * control frames they send, and is the one way a connection ends.
 *
 * @module
 */

import { type CancelTimer, type Clock, systemClock } from "../clock.ts";
import { bytesEqual } from "../bytes_equal.ts";
import { type Deadline, type Keepalive, KEEPALIVE_PING } from "./_keepalive.ts";
import type { StreamStore } from "./_stream_store.ts";
import type { ConnectionObserver, ConnectionRole } from "./connection_options.ts";
import { H2_ERROR } from "./errors.ts";
import type { FrameWriter } from "./frame_writer.ts";
import { goawayFrame, MAX_INT31, pingFrame } from "./frames.ts";

const SHUTDOWN_PING = new Uint8Array([0x73, 0x68, 0x75, 0x74, 0x64, 0x6f, 0x77, 0x6e]);
/** Longest wait for the shutdown PING's answer before the final GOAWAY, ms. */
const SHUTDOWN_PING_WAIT_MS = 1000;
/** Longest wait for the last frames to reach a peer that does not read, ms. */
const FLUSH_TIMEOUT_MS = 1000;
/**
 * How long a server keeps a drained connection open after the client's
 * GOAWAY, still answering its PINGs and SETTINGS, unless the client closes
 * first (as Go's server waits after a GOAWAY). Closing at once lost a PING
 * the client had sent right behind its GOAWAY whenever the two arrived in
 * separate reads (h2spec http2/7 failed that way on a loaded machine), ms.
 */
const PEER_GOAWAY_LINGER_MS = 1000;

/**
 * Where a connection is in its life; it only moves down this list, and
 * skips what does not apply.
 * - `open`: streams come and go.
 * - `peerGoingAway`: the peer sent GOAWAY: this side opens no stream, and
 *   closes once its streams are done.
 * - `lingering`: a server whose streams are done after the peer's GOAWAY,
 *   still answering PINGs and SETTINGS for a moment.
 * - `pinging`: our shutdown began: a GOAWAY that refuses nothing and a PING
 *   are out; its answer (or a timer) sends the final GOAWAY.
 * - `goneAway`: our final GOAWAY is out: streams above its last id are
 *   refused, and the connection closes once the rest are done.
 * - `flushing`: nothing more is read; the last frames are being written.
 * - `closed`: the socket is closed and every stream ended.
 */
export type LifeState =
  | "open"
  | "peerGoingAway"
  | "lingering"
  | "pinging"
  | "goneAway"
  | "flushing"
  | "closed";

/** What a connection's life acts on: its socket and the owners of its other state. */
export interface LifeParts {
  readonly role: ConnectionRole;
  readonly conn: Deno.Conn;
  readonly streams: StreamStore;
  readonly writer: FrameWriter;
  readonly keepalive: Keepalive;
  readonly clock: Clock;
  /** Queued control bytes past which the peer is taken not to read. */
  readonly maxControlBacklog: number;
  readonly observer: ConnectionObserver | undefined;
}

/** The life of one connection. */
export class ConnectionLife {
  readonly #parts: LifeParts;
  #state: LifeState = "open";
  /** The last stream id our final GOAWAY accepts (`goneAway`). */
  #goawayLastId = MAX_INT31;
  /** The timers of the shutdown and of the linger; all cancelled on close. */
  readonly #timers: CancelTimer[] = [];
  readonly #done = Promise.withResolvers<void>();

  /** @param parts The connection's socket and state owners. */
  constructor(parts: LifeParts) {
    this.#parts = parts;
  }

  /** Resolves once the connection is closed and its socket released. */
  get done(): Promise<void> {
    return this.#done.promise;
  }

  /** Whether the connection is flushing or closed: nothing more is read. */
  get ending(): boolean {
    return this.#state === "flushing" || this.#state === "closed";
  }

  /** Whether this side may open streams. */
  get open(): boolean {
    return this.#state === "open";
  }

  /** Streams of the peer's above this id are refused. */
  get refuseAbove(): number {
    return this.#state === "goneAway" ? this.#goawayLastId : MAX_INT31;
  }

  /** Queues a control frame, unless closed. */
  send(frame: Uint8Array): void {
    if (this.#state === "closed") return;
    this.#parts.writer.queueControl(frame);
    this.checkBacklog();
  }

  /** Fails the connection when the peer keeps asking for answers (PINGs, SETTINGS, window updates) it does not read. */
  checkBacklog(): void {
    const writer = this.#parts.writer;
    if (writer.controlBacklog > this.#parts.maxControlBacklog && !this.ending) {
      writer.clearControl();
      this.fail(H2_ERROR.ENHANCE_YOUR_CALM, "the peer does not read what it asks for");
    }
  }

  /** Acts on a keepalive deadline. */
  expired(deadline: Deadline): void {
    switch (deadline) {
      case "handshake":
        return this.fail(H2_ERROR.SETTINGS_TIMEOUT, "no HTTP/2 preface and SETTINGS in time");
      case "idle":
        return this.shutdown(1000);
      case "ping":
        return this.send(pingFrame(KEEPALIVE_PING, false));
      case "unanswered":
        return this.fail(H2_ERROR.NO_ERROR, "keepalive PING not answered");
    }
  }

  /**
   * Graceful shutdown (RFC 9113 section 6.8): a GOAWAY that refuses nothing
   * yet and a PING; once the PING returns (or after a second), a GOAWAY
   * naming the last stream accepted. The connection closes when its streams
   * are done, or after `graceMs`. Both waits run on the connection's clock.
   */
  shutdown(graceMs: number): void {
    if (this.ending) return;
    // No grace: GOAWAY naming the last stream taken, and close now (no timer
    // to wait on, whatever the clock).
    if (graceMs <= 0) return this.fail(H2_ERROR.NO_ERROR, "shutdown without a grace period");
    if (this.#state === "open" || this.#state === "peerGoingAway") {
      this.#state = "pinging";
      this.send(goawayFrame(MAX_INT31, H2_ERROR.NO_ERROR));
      this.send(pingFrame(SHUTDOWN_PING, false));
      const clock = this.#parts.clock;
      this.#timers.push(
        clock.setTimer(Math.min(SHUTDOWN_PING_WAIT_MS, graceMs), () => this.#finalGoaway()),
        clock.setTimer(graceMs, () => this.fail(H2_ERROR.NO_ERROR, "shutdown grace period over")),
      );
    }
    this.closeIfDrained();
  }

  /** The peer sent GOAWAY. */
  peerGoingAway(): void {
    if (this.#state === "open") this.#state = "peerGoingAway";
    this.closeIfDrained();
  }

  /** The peer answered a PING: ours on shutdown sends the final GOAWAY; any ends a keepalive wait. */
  pingAnswered(payload: Uint8Array): void {
    if (bytesEqual(payload, SHUTDOWN_PING)) this.#finalGoaway();
    this.#parts.keepalive.pingAnswered();
  }

  #finalGoaway(): void {
    if (this.#state !== "pinging") return;
    this.#state = "goneAway";
    this.#goawayLastId = this.#parts.streams.lastPeerStreamId;
    this.send(goawayFrame(this.#goawayLastId, H2_ERROR.NO_ERROR));
    this.closeIfDrained();
  }

  /** Closes the connection once no stream is left, if it is going away. */
  closeIfDrained(): void {
    if (this.#parts.streams.size > 0) return;
    const state = this.#state;
    if (state === "goneAway" || (state === "peerGoingAway" && this.#parts.role === "client")) {
      this.#finishWritesThenClose();
    } else if (state === "peerGoingAway") {
      this.#state = "lingering";
      this.#timers.push(
        this.#parts.clock.setTimer(PEER_GOAWAY_LINGER_MS, () => this.#finishWritesThenClose()),
      );
    }
  }

  /** A protocol error or a request to close: GOAWAY with `code`, then close. */
  fail(code: number, message: string): void {
    if (this.ending) return;
    const { observer, writer } = this.#parts;
    if (code !== H2_ERROR.NO_ERROR) observer?.connectionError?.(code, message);
    writer.clearStreams();
    writer.clearControl();
    this.send(goawayFrame(this.#parts.streams.lastPeerStreamId, code, message));
    this.#finishWritesThenClose(code === H2_ERROR.NO_ERROR ? H2_ERROR.CANCEL : code);
  }

  /** Code inside the connection threw: reported, and the connection fails. */
  internalFailure(err: unknown): void {
    this.#parts.observer?.internalError?.(err);
    this.fail(H2_ERROR.INTERNAL_ERROR, "internal error");
  }

  #finishWritesThenClose(streamCode: number = H2_ERROR.CANCEL): void {
    if (this.ending) return;
    this.#state = "flushing";
    const writer = this.#parts.writer;
    writer.controlOnly = true;
    writer.clearStreams();
    writer.kick();
    // A peer that does not read cannot hold the socket open: give up after a
    // second. This bounds a socket write, an I/O wait, so it runs on real
    // time: a test's frozen clock must not keep a socket open forever.
    let cancel: CancelTimer | undefined;
    const timeout = new Promise<void>((resolve) => {
      cancel = systemClock.setTimer(FLUSH_TIMEOUT_MS, resolve);
    });
    Promise.race([writer.idle, timeout]).then(() => {
      cancel?.();
      this.terminate(streamCode);
    });
  }

  /** Closes the socket and ends every stream with `streamCode`; safe to call more than once. */
  terminate(streamCode: number): void {
    if (this.#state === "closed") return;
    this.#state = "closed";
    const { conn, keepalive, observer, streams, writer } = this.#parts;
    keepalive.stop();
    for (const cancel of this.#timers) cancel();
    writer.clearStreams();
    writer.clearControl();
    for (const stream of streams.removeAll()) {
      try {
        stream.finish(streamCode);
      } catch (err) {
        observer?.internalError?.(err);
      }
    }
    try {
      conn.close();
    } catch {
      // Already closed by the peer.
    }
    this.#done.resolve();
  }
}
