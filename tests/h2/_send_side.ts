// What the writer and send-flow tests build: a FrameWriter within a
// SendFlow, and a peer's WINDOW_UPDATE fed to that flow.
import assert from "node:assert/strict";
import type { SendFlow } from "../../src/h2/_send_flow.ts";
import type { StreamStore } from "../../src/h2/_stream_store.ts";
import { FrameWriter } from "../../src/h2/frame_writer.ts";
import { FRAME_HEADER_BYTES, readFrameHeader, windowUpdateFrame } from "../../src/h2/frames.ts";
import { HpackEncoder } from "../../src/h2/hpack.ts";
import { INITIAL_SETTINGS } from "../../src/h2/settings.ts";

/** A writer on `conn` within `flow`, to a peer with the initial settings; a failed write fails the test. */
export function writerWithin(conn: Pick<Deno.Conn, "write">, flow: SendFlow): FrameWriter {
  return new FrameWriter(
    conn as Deno.Conn,
    new HpackEncoder(),
    INITIAL_SETTINGS,
    flow,
    () => assert.fail("a write failed"),
  );
}

/** The peer's WINDOW_UPDATE of `increment` on `streamId` (0: the connection), as received. */
export function receiveWindowUpdate(
  flow: SendFlow,
  streams: StreamStore,
  streamId: number,
  increment: number,
): ReturnType<SendFlow["onWindowUpdate"]> {
  const frame = windowUpdateFrame(streamId, increment);
  return flow.onWindowUpdate(
    readFrameHeader(frame, 0),
    frame.subarray(FRAME_HEADER_BYTES),
    streams,
  );
}
