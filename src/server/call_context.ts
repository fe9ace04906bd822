/**
 * What a handler knows about the call it serves, free of transport types.
 *
 * @module
 */

import type { FramedMessage } from "../grpc/message_framing.ts";
import type { ServerApiVersion } from "../metrics/metrics.ts";

/** The call a handler serves. */
export interface CallContext {
  /** Which service the call came in on. */
  readonly apiVersion: ServerApiVersion;
  /** Aborted when the client cancels, its deadline passes, or the server shuts down. */
  readonly signal: AbortSignal;
  /** One object per client connection, to key per-connection state (a WeakMap key). */
  readonly connection: object;
  /**
   * @param key A metadata key (lower case).
   * @returns Every value sent under `key`; binary keys (`-bin`) give bytes.
   */
  metadata(key: string): readonly (string | Uint8Array)[];
}

/** Where a watch handler writes its frames (watch_batches.ts), a batch at a time. */
export interface WatchSink {
  /**
   * @param frames Framed messages, sent in order as one write (a batch of events).
   * @returns `undefined` when the transport can take more at once, else a
   *   promise that resolves once it can (the client's backlog is full).
   */
  sendAll(frames: readonly FramedMessage[]): Promise<void> | undefined;
}
