/**
 * How the gRPC watch handlers write a watch: a batch of items at a time,
 * each batch one write.
 *
 * @module
 */

import type { FramedMessage } from "../grpc/message_framing.ts";
import type { WatchItem } from "../query/mod.ts";
import type { WatchSink } from "./call_context.ts";
import { MESSAGES, RpcError, STATUS } from "./errors.ts";

/** How a watch ends when its client left: one error, as an error's stack costs per call. */
const CLIENT_LEFT = new RpcError(STATUS.CANCELLED, "call cancelled by the client");

/** What ends a watch from outside: its client leaving, the daemon stopping. */
export interface WatchEnds {
  /** The call's signal. */
  readonly client: AbortSignal;
  /** The daemon's shutdown. */
  readonly shutdown: AbortSignal;
}

/**
 * @param ends The client's and the daemon's signals.
 * @throws {RpcError} UNAVAILABLE once the daemon stops, CANCELLED once the client left.
 */
function checkAlive(ends: WatchEnds): void {
  if (ends.shutdown.aborted) throw new RpcError(STATUS.UNAVAILABLE, MESSAGES.shuttingDown);
  if (ends.client.aborted) throw CLIENT_LEFT;
}

/**
 * Sends a watch's batches to a sink, each as one write item, in order: a
 * client's backlog passes its limit by one batch at most, and the handler
 * waits only while that backlog is full. A watch ends only from outside,
 * so this never returns: it throws how it ended.
 *
 * @param batches The watch's batches.
 * @param sink Where the frames go.
 * @param frameOf An item's frame, or `undefined` for an item the surface does not send.
 * @param ends The client's and the daemon's signals.
 * @throws {RpcError} UNAVAILABLE when the daemon stops, CANCELLED when the client leaves.
 * @throws {WatchDroppedError} When the watcher fell too far behind.
 */
export async function sendBatches(
  batches: AsyncIterable<readonly WatchItem[]>,
  sink: WatchSink,
  frameOf: (item: WatchItem) => FramedMessage | undefined,
  ends: WatchEnds,
): Promise<never> {
  for await (const batch of batches) {
    checkAlive(ends);
    // Sized once (pushing grows it several times over a batch of 128), and
    // indexed: an array iterator makes a result object per step until the
    // loop is optimized, and a watcher's initial list is one pass.
    const frames: FramedMessage[] = new Array(batch.length);
    let n = 0;
    for (let i = 0; i < batch.length; i++) {
      const frame = frameOf(batch[i]!);
      if (frame !== undefined) frames[n++] = frame;
    }
    if (n === 0) continue;
    frames.length = n;
    const wait = sink.sendAll(frames);
    if (wait !== undefined) await wait;
  }
  // The batches end when the watch closed: the client left or the daemon stops.
  checkAlive(ends);
  throw new RpcError(STATUS.UNAVAILABLE, MESSAGES.shuttingDown);
}
