/**
 * How the gRPC watch handlers write a watch: a batch of items at a time,
 * each batch one write.
 *
 * @module
 */

import type { FramedMessage } from "../grpc/message_framing.ts";
import type { WatchItem } from "../query/mod.ts";
import type { WatchSink } from "./call_context.ts";

/**
 * Sends a watch's batches to a sink, each as one write item, in order: a
 * client's backlog passes its limit by one batch at most, and the handler
 * waits only while that backlog is full.
 *
 * @param batches The watch's batches.
 * @param sink Where the frames go.
 * @param frameOf An item's frame, or `undefined` for an item the surface does not send.
 * @param checkAlive Throws once the client left or the daemon is stopping.
 * @returns Resolves when the watch ends.
 */
export async function sendBatches(
  batches: AsyncIterable<readonly WatchItem[]>,
  sink: WatchSink,
  frameOf: (item: WatchItem) => FramedMessage | undefined,
  checkAlive: () => void,
): Promise<void> {
  for await (const batch of batches) {
    checkAlive();
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
}
