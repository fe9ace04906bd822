// The connection's writer on a fake socket that records each write: which
// write buffer a loop takes (SPEC section 13 bounds what a connection holds).
import assert from "node:assert/strict";
import { FlowWindow } from "../../src/h2/flow_window.ts";
import { FrameWriter, type FrameWriterHost } from "../../src/h2/frame_writer.ts";
import { HpackEncoder } from "../../src/h2/hpack.ts";
import { Http2Stream, type StreamHost } from "../../src/h2/stream.ts";

/** A socket that takes every write whole and records its size. */
class RecordingConn {
  readonly writes: number[] = [];
  write(p: Uint8Array): Promise<number> {
    this.writes.push(p.byteLength);
    return Promise.resolve(p.byteLength);
  }
}

function writerWith(conn: RecordingConn): { writer: FrameWriter; streamHost: StreamHost } {
  const host: FrameWriterHost = {
    peerMaxFrameSize: () => 16_384,
    sendWindow: new FlowWindow(1 << 30),
    owns: () => true,
    localEnded: () => {},
    writeFailed: () => assert.fail("a write failed"),
  };
  const writer = new FrameWriter(conn as unknown as Deno.Conn, new HpackEncoder(), host);
  const streamHost: StreamHost = {
    schedule: (stream) => writer.schedule(stream),
    resetStream: () => {},
    released: () => {},
  };
  return { writer, streamHost };
}

Deno.test("FrameWriter writes one large body in writes above 64 KiB", async () => {
  const conn = new RecordingConn();
  const { writer, streamHost } = writerWith(conn);
  const stream = new Http2Stream(1, streamHost, 1 << 30, 1 << 20);
  stream.sendHeaders({ fields: [[":status", "200"]] }, false);
  stream.sendData(new Uint8Array(2 << 20), true);
  await new Promise((r) => setTimeout(r, 0));
  await writer.idle;
  assert.equal(stream.queuedBytes, 0);
  assert.ok(Math.max(...conn.writes) > 64 * 1024, `writes: ${conn.writes}`);
});

Deno.test("FrameWriter writes a backlog of many small frames (a watcher's initial list) 64 KiB at a time", async () => {
  const conn = new RecordingConn();
  const { writer, streamHost } = writerWith(conn);
  const stream = new Http2Stream(1, streamHost, 1 << 30, 1 << 20);
  stream.sendHeaders({ fields: [[":status", "200"]] }, false);
  // 1000 events of 2 KB: 2 MB queued, as a watcher syncing 1000 pods.
  for (let i = 0; i < 1000; i++) stream.sendData(new Uint8Array(2000), false);
  await new Promise((r) => setTimeout(r, 0));
  await writer.idle;
  assert.equal(stream.queuedBytes, 0);
  assert.ok(conn.writes.length > 0);
  assert.ok(Math.max(...conn.writes) <= 64 * 1024, `writes: ${conn.writes}`);
});
