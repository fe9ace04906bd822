/**
 * A watch handler's call and sink without a transport: what the services'
 * unit tests hand them.
 *
 * @module
 */

import type { FramedMessage } from "../../src/grpc/message_framing.ts";
import type { ServerApiVersion } from "../../src/metrics/metrics.ts";
import type { CallContext, WatchSink } from "../../src/server/call_context.ts";

/**
 * A call context.
 *
 * @param metadata Its metadata, one value per key.
 * @param apiVersion The surface.
 * @param signal Aborts when the client leaves.
 * @returns The context.
 */
export function ctxOf(
  metadata: Record<string, string> = {},
  apiVersion: ServerApiVersion = "v1alpha1",
  signal: AbortSignal = new AbortController().signal,
): CallContext {
  return {
    apiVersion,
    signal,
    connection: {},
    metadata: (key) => metadata[key] === undefined ? [] : [metadata[key]!],
  };
}

/**
 * A sink that keeps each message without its gRPC prefix, and how many
 * messages each write held (`writes`).
 */
export function collectingSink(): WatchSink & {
  messages: Uint8Array[];
  writes: number[];
  sent: Promise<void>;
} {
  let wake: () => void = () => {};
  const sink = {
    messages: [] as Uint8Array[],
    writes: [] as number[],
    sent: new Promise<void>((resolve) => wake = resolve),
    sendAll(frames: readonly FramedMessage[]) {
      for (const frame of frames) sink.messages.push(frame.message);
      sink.writes.push(frames.length);
      const done = wake;
      sink.sent = new Promise<void>((resolve) => wake = resolve);
      done();
      return Promise.resolve();
    },
  };
  return sink;
}
