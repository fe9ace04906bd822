/**
 * What an `Http2Connection` is made with: its role, the limits a
 * peer may not pass (and their defaults), the observer of its failures, and
 * the error a closed connection answers with.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import type { HeaderField } from "./hpack.ts";
import type { Http2Stream } from "./stream.ts";

/** Which end of the connection this is. */
export type ConnectionRole = "server" | "client";

/** Bounds on what a peer may make this side hold or do. */
export interface ConnectionLimits {
  /** Streams the peer may have open at once (our SETTINGS_MAX_CONCURRENT_STREAMS). */
  maxConcurrentStreams: number;
  /** Our SETTINGS_INITIAL_WINDOW_SIZE: what the peer may send per stream unread. */
  streamWindow: number;
  /** What the peer may send on the whole connection unread. */
  connectionWindow: number;
  /** Our SETTINGS_MAX_HEADER_LIST_SIZE (RFC 9113 accounting: name + value + 32). */
  maxHeaderListSize: number;
  /** Most CONTINUATION frames in one header block. */
  maxContinuationFrames: number;
  /** Time to receive the preface and first SETTINGS, ms. */
  handshakeTimeoutMs: number;
  /** A connection with no stream for this long is closed gracefully, ms; 0 never. */
  idleTimeoutMs: number;
  /** With streams open and nothing received for this long, PING the peer, ms; 0 never. */
  keepaliveMs: number;
  /** A PING unanswered this long ends the connection, ms. */
  keepaliveTimeoutMs: number;
  /** PING and SETTINGS frames a peer may send: per second, and in a burst. */
  controlRate: { qps: number; burst: number };
  /** Streams a peer may reset (RST_STREAM): per second, and in a burst ("rapid reset"). */
  resetRate: { qps: number; burst: number };
  /** Frames this side may have queued for a peer that does not read, bytes. */
  maxControlBacklog: number;
}

/** Defaults sized for a node-local API socket. */
export const DEFAULT_LIMITS: Readonly<ConnectionLimits> = Object.freeze({
  maxConcurrentStreams: 1100,
  streamWindow: 1 << 20,
  connectionWindow: 16 << 20,
  maxHeaderListSize: 16 << 10,
  maxContinuationFrames: 32,
  handshakeTimeoutMs: 10_000,
  idleTimeoutMs: 0,
  keepaliveMs: 0,
  keepaliveTimeoutMs: 20_000,
  controlRate: { qps: 1000, burst: 2000 },
  resetRate: { qps: 200, burst: 1000 },
  maxControlBacklog: 1 << 20,
});

/** What a connection reports about its peer's misbehaviour and its own failures. */
export interface ConnectionObserver {
  /** This side ended the connection with GOAWAY and an error code. */
  connectionError?(code: number, message: string): void;
  /** This side reset one stream for a protocol error. */
  streamError?(code: number, message: string): void;
  /** Code above or inside the connection threw; the connection was closed. */
  internalError?(error: unknown): void;
}

/** Options of `Http2Connection`. */
export interface ConnectionOptions {
  role: ConnectionRole;
  limits?: Partial<ConnectionLimits>;
  /**
   * Server side: a peer opened a stream with these request headers (already
   * checked). Set `stream.listener` to hear the rest. When the list was
   * above `maxHeaderListSize`, `oversizedBytes` is its size and `fields` only
   * its first part (unchecked): refuse the request.
   */
  onStream?(
    stream: Http2Stream,
    fields: HeaderField[],
    endStream: boolean,
    oversizedBytes: number,
  ): void;
  observer?: ConnectionObserver;
  clock?: Clock;
}

/** The error a client sees when it asks a closed or closing connection for a stream. */
export class ConnectionClosedError extends Error {
  /**
   * @param message Why no stream can be opened.
   */
  constructor(message: string) {
    super(message);
    this.name = "ConnectionClosedError";
  }
}
