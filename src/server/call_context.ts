/**
 * What a handler knows about the call it serves, free of grpc-js types.
 *
 * @module
 */

import type { ServerApiVersion } from "../metrics/metrics.ts";

/** The call a handler serves. */
export interface CallContext {
  /** Which service the call came in on. */
  readonly apiVersion: ServerApiVersion;
  /** Aborted when the client cancels, its deadline passes, or the server shuts down. */
  readonly signal: AbortSignal;
  /**
   * @param key A metadata key (lower case).
   * @returns Every value sent under `key`; binary keys (`-bin`) give bytes.
   */
  metadata(key: string): readonly (string | Uint8Array)[];
}

/** Where a watch handler writes its frames; `send` waits while the client's buffer is full. */
export interface WatchSink {
  /**
   * @param frame One encoded response message.
   * @returns Resolves once the transport can take more.
   */
  send(frame: Uint8Array): Promise<void>;
}
