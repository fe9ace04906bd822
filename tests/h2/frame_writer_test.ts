// The connection's writer on a fake socket that records each write: which
// write buffer a loop takes (DESIGN.md §13 bounds what a connection holds).
import assert from "node:assert/strict";
import { SendFlow } from "../../src/h2/_send_flow.ts";
import { StreamStore } from "../../src/h2/_stream_store.ts";
import { FrameWriter } from "../../src/h2/frame_writer.ts";
import { FLAG, FRAME_HEADER_BYTES, FRAME_TYPE, readFrameHeader } from "../../src/h2/frames.ts";
import { INITIAL_SETTINGS } from "../../src/h2/settings.ts";
import { Http2Stream, type StreamHost } from "../../src/h2/stream.ts";
import { receiveWindowUpdate, writerWithin } from "./_send_side.ts";

/** A socket that takes every write whole and records its size and bytes. */
class RecordingConn {
  readonly writes: number[] = [];
  readonly #copies: Uint8Array[] = [];
  write(p: Uint8Array): Promise<number> {
    this.writes.push(p.byteLength);
    this.#copies.push(p.slice());
    return Promise.resolve(p.byteLength);
  }

  /** The stream id of every DATA frame written, in order. */
  dataStreamIds(): number[] {
    const ids = [];
    for (const copy of this.#copies) {
      for (let pos = 0; pos < copy.length;) {
        const h = readFrameHeader(copy, pos);
        if (h.type === FRAME_TYPE.DATA) ids.push(h.streamId);
        pos += FRAME_HEADER_BYTES + h.length;
      }
    }
    return ids;
  }

  /** Every DATA frame written: its payload and whether it ended the stream. */
  dataFrames(): { payload: number[]; end: boolean }[] {
    const bytes = new Uint8Array(this.writes.reduce((a, b) => a + b, 0));
    let at = 0;
    for (const copy of this.#copies) {
      bytes.set(copy, at);
      at += copy.byteLength;
    }
    const frames = [];
    for (let pos = 0; pos < bytes.length;) {
      const h = readFrameHeader(bytes, pos);
      const payload = [
        ...bytes.subarray(pos + FRAME_HEADER_BYTES, pos + FRAME_HEADER_BYTES + h.length),
      ];
      if (h.type === FRAME_TYPE.DATA) {
        frames.push({ payload, end: (h.flags & FLAG.END_STREAM) !== 0 });
      }
      pos += FRAME_HEADER_BYTES + h.length;
    }
    return frames;
  }
}

function filled(length: number, value: number): Uint8Array {
  return new Uint8Array(length).fill(value);
}

/** Waits for the write loop the queued items started to finish. */
async function written(writer: FrameWriter): Promise<void> {
  await new Promise((r) => setTimeout(r, 0));
  await writer.idle;
}

/** Opens the stream's window `steps` bytes at a time, each step written; returns the DATA frames. */
async function writtenInSteps(
  conn: RecordingConn,
  writer: FrameWriter,
  stream: Http2Stream,
  steps: readonly number[],
): Promise<{ payload: number[]; end: boolean }[]> {
  for (const step of steps) {
    stream.sendWindow += step;
    writer.schedule(stream);
    await written(writer);
  }
  return conn.dataFrames();
}

/** A writer on a recording socket and one stream on it, its response headers queued. */
function respondingStream(sendWindow: number): {
  conn: RecordingConn;
  writer: FrameWriter;
  stream: Http2Stream;
} {
  const { conn, writer, open } = recordingWriter();
  return { conn, writer, stream: open(1, sendWindow) };
}

/** A writer on a recording socket; `open` makes a stream on it with its response headers queued. */
function recordingWriter(): {
  conn: RecordingConn;
  writer: FrameWriter;
  open: (id: number, sendWindow: number) => Http2Stream;
} {
  const conn = new RecordingConn();
  const flow = new SendFlow();
  const writer = writerWithin(conn, flow);
  // The connection's window at 2^30, as a peer's WINDOW_UPDATE grows it.
  const increment = (1 << 30) - INITIAL_SETTINGS.initialWindowSize;
  receiveWindowUpdate(flow, new StreamStore("server"), 0, increment);
  const streamHost: StreamHost = {
    schedule: (stream) => writer.schedule(stream),
    resetStream: () => {},
    released: () => {},
    localEnded: () => {},
  };
  const open = (id: number, sendWindow: number): Http2Stream => {
    const stream = new Http2Stream(id, streamHost, sendWindow, 1 << 20);
    stream.sendHeaders({ fields: [[":status", "200"]] }, false);
    return stream;
  };
  return { conn, writer, open };
}

Deno.test("FrameWriter writes one large body in writes above 64 KiB that fit a UNIX socket's send buffer", async () => {
  const { conn, writer, stream } = respondingStream(1 << 30);
  stream.sendData(new Uint8Array(2 << 20), true);
  await written(writer);
  assert.equal(stream.queuedBytes, 0);
  assert.ok(Math.max(...conn.writes) > 64 * 1024, `writes: ${conn.writes}`);
  // Linux's default (net.core.wmem_default, 208 KiB): a larger write is partial.
  assert.ok(Math.max(...conn.writes) <= 208 * 1024, `writes: ${conn.writes}`);
});

Deno.test("FrameWriter writes a backlog of many small frames (a watcher's initial list) 16 KiB at a time", async () => {
  const { conn, writer, stream } = respondingStream(1 << 30);
  // 1000 events of 2 KB: 2 MB queued, as a watcher syncing 1000 pods.
  for (let i = 0; i < 1000; i++) stream.sendData(new Uint8Array(2000), false);
  await written(writer);
  assert.equal(stream.queuedBytes, 0);
  assert.ok(conn.writes.length > 0);
  assert.ok(Math.max(...conn.writes) <= 16 * 1024, `writes: ${conn.writes}`);
});

Deno.test("FrameWriter writes a body of a few dozen pods (100 KB) in one write", async () => {
  const { conn, writer, stream } = respondingStream(1 << 30);
  stream.sendData(new Uint8Array(100_000), true);
  await written(writer);
  assert.equal(stream.queuedBytes, 0);
  assert.deepEqual(conn.writes.length, 1, `writes: ${conn.writes}`);
});

Deno.test("FrameWriter puts a stream's consecutive DATA items (a message's prefix and its shared body) in one frame", async () => {
  const { conn, writer, stream } = respondingStream(1 << 30);
  stream.sendData(filled(7, 1), false);
  stream.sendData(filled(100, 2), false);
  stream.sendData(filled(3, 3), false);
  stream.sendHeaders({ fields: [["grpc-status", "0"]] }, true);
  await written(writer);
  const frames = conn.dataFrames();
  assert.equal(frames.length, 1);
  assert.deepEqual(frames[0]!.payload, [...filled(7, 1), ...filled(100, 2), ...filled(3, 3)]);
  assert.equal(frames[0]!.end, false, "the trailers end the stream");
  assert.equal(stream.queuedBytes, 0);
});

Deno.test("FrameWriter splits gathered DATA at the stream's window and ends the stream with its last item", async () => {
  const { conn, writer, stream } = respondingStream(50);
  stream.sendData(filled(30, 1), false);
  stream.sendData(filled(40, 2), false);
  stream.sendData(filled(0, 0), true);
  await written(writer);
  assert.deepEqual(conn.dataFrames().map((f) => f.payload.length), [50]);
  assert.equal(stream.queuedBytes, 20);
  stream.sendWindow += 100;
  writer.schedule(stream);
  await written(writer);
  const frames = conn.dataFrames();
  assert.deepEqual(frames.map((f) => [f.payload.length, f.end]), [[50, false], [20, true]]);
  assert.deepEqual(frames.flatMap((f) => f.payload), [...filled(30, 1), ...filled(40, 2)]);
  assert.equal(stream.queuedBytes, 0);
});

Deno.test("FrameWriter ends a stream whose last item is empty with an empty DATA frame", async () => {
  const { conn, writer, stream } = respondingStream(0);
  stream.sendData(new Uint8Array(0), true);
  await written(writer);
  assert.deepEqual(conn.dataFrames(), [{ payload: [], end: true }]);
});

Deno.test("FrameWriter writes a DATA item's bytes then its tail, split anywhere by the window", async () => {
  const head = Uint8Array.from({ length: 7 }, (_, i) => i);
  const tail = Uint8Array.from({ length: 100 }, (_, i) => 100 + i);
  // Window steps that end inside the head, at its end, inside the tail and at its end.
  for (const steps of [[3, 104], [7, 100], [50, 57], [107]]) {
    const { conn, writer, stream } = respondingStream(0);
    stream.sendData(head, true, tail);
    const frames = await writtenInSteps(conn, writer, stream, steps);
    assert.deepEqual(frames.map((f) => f.payload.length), steps, `steps ${steps}`);
    assert.deepEqual(frames.flatMap((f) => f.payload), [...head, ...tail]);
    assert.deepEqual(frames.map((f) => f.end), steps.map((_, i) => i === steps.length - 1));
    assert.equal(stream.queuedBytes, 0);
  }
});

Deno.test("FrameWriter writes an item of parts in order, each part's head then tail, split anywhere by the window", async () => {
  const seq = (from: number, length: number) =>
    Uint8Array.from({ length }, (_, i) => (from + i) % 256);
  const parts = [
    { head: seq(0, 5), tail: seq(10, 20) },
    { head: seq(40, 3), tail: new Uint8Array(0) },
    { head: new Uint8Array(0), tail: new Uint8Array(0) },
    { head: seq(60, 4), tail: seq(70, 9) },
  ];
  const all = parts.flatMap((p) => [...p.head, ...p.tail]);
  assert.equal(all.length, 41);
  // Window steps ending inside a head, at a head's end, inside a tail, at a
  // part's end (before the empty part) and at the item's end.
  for (const steps of [[41], [2, 3, 10, 10, 16], [25, 3, 13], [1, 1, 1, 38], [5, 36]]) {
    const { conn, writer, stream } = respondingStream(0);
    assert.ok(stream.sendParts(parts));
    assert.equal(stream.queuedBytes, 41);
    const frames = await writtenInSteps(conn, writer, stream, steps);
    assert.deepEqual(frames.map((f) => f.payload.length), steps, `steps ${steps}`);
    assert.deepEqual(frames.flatMap((f) => f.payload), all, `steps ${steps}`);
    assert.equal(stream.queuedBytes, 0);
  }
});

Deno.test("FrameWriter puts an item of parts in the frame of the DATA before and after it", async () => {
  const { conn, writer, stream } = respondingStream(1 << 30);
  stream.sendData(filled(2, 1), false);
  stream.sendParts([{ head: filled(3, 2), tail: filled(4, 3) }, {
    head: filled(1, 4),
    tail: filled(2, 5),
  }]);
  stream.sendData(filled(2, 6), true);
  await written(writer);
  const frames = conn.dataFrames();
  assert.equal(frames.length, 1);
  assert.deepEqual(frames[0]!.payload, [
    ...filled(2, 1),
    ...filled(3, 2),
    ...filled(4, 3),
    ...filled(1, 4),
    ...filled(2, 5),
    ...filled(2, 6),
  ]);
  assert.equal(frames[0]!.end, true);
});

Deno.test("FrameWriter writes a batch of many small parts (a watcher's initial list as one item) 16 KiB at a time", async () => {
  const { conn, writer, stream } = respondingStream(1 << 30);
  // 1000 events of 2 KB in one item: not one large body.
  const parts = Array.from({ length: 1000 }, () => ({
    head: new Uint8Array(12),
    tail: new Uint8Array(1988),
  }));
  stream.sendParts(parts);
  await written(writer);
  assert.equal(stream.queuedBytes, 0);
  assert.equal(conn.writes.reduce((a, b) => a + b, 0) > 2_000_000, true);
  assert.ok(Math.max(...conn.writes) <= 16 * 1024, `writes: ${conn.writes}`);
});

Deno.test("Http2Stream.sendParts() queues nothing for empty parts and refuses once the stream cannot send", () => {
  const { stream } = respondingStream(1 << 30);
  assert.equal(stream.sendParts([{ head: new Uint8Array(0), tail: new Uint8Array(0) }]), true);
  assert.equal(stream.queuedBytes, 0);
  stream.sendData(new Uint8Array(1), true);
  assert.equal(stream.sendParts([{ head: new Uint8Array(1), tail: new Uint8Array(0) }]), false);
  assert.equal(stream.queuedBytes, 1);
});

Deno.test("FrameWriter takes ready streams in turn, each once however often it was scheduled", async () => {
  const { conn, writer, open } = recordingWriter();
  const [a, b, c] = [open(1, 1 << 30), open(3, 1 << 30), open(5, 1 << 30)];
  for (const stream of [a, b, c]) {
    // Frames of 16 KiB, written one per stream per turn.
    for (let i = 0; i < 3; i++) stream.sendData(new Uint8Array(16_384), false);
    writer.schedule(stream);
  }
  writer.schedule(a);
  await written(writer);
  const ids = conn.dataStreamIds();
  assert.ok(ids.length >= 9, `frames: ${ids}`);
  assert.deepEqual(ids, turns([1, 3, 5], ids.length / 3));
});

/** `ids` in turn, `count` turns. */
function turns(ids: readonly number[], count: number): number[] {
  return Array.from({ length: count }, () => ids).flat();
}

Deno.test("FrameWriter leaves out a stream taken from the line and keeps the others' order", async () => {
  const { conn, writer, open } = recordingWriter();
  const [a, b, c] = [open(1, 1 << 30), open(3, 1 << 30), open(5, 1 << 30)];
  for (const stream of [a, b, c]) {
    stream.sendData(new Uint8Array(16_384), false);
    stream.sendData(new Uint8Array(16_384), false);
    writer.schedule(stream);
  }
  writer.unschedule(b);
  await written(writer);
  const before = conn.dataStreamIds();
  assert.ok(before.length >= 4, `frames: ${before}`);
  assert.deepEqual(before, turns([1, 5], before.length / 2));
  assert.equal(b.queuedBytes, 2 * 16_384);
  // Scheduled again, it is back in the line.
  writer.schedule(b);
  await written(writer);
  const after = conn.dataStreamIds().slice(before.length);
  assert.ok(after.length > 0 && after.every((id) => id === 3), `frames: ${after}`);
  assert.equal(b.queuedBytes, 0);
});

Deno.test("FrameWriter forgets every ready stream at once, and takes them again when scheduled", async () => {
  const { conn, writer, open } = recordingWriter();
  const [a, b] = [open(1, 1 << 30), open(3, 1 << 30)];
  writer.clearStreams();
  for (const stream of [a, b]) stream.sendData(new Uint8Array(10), false);
  writer.clearStreams();
  await written(writer);
  assert.deepEqual(conn.dataStreamIds(), []);
  writer.schedule(b);
  writer.schedule(a);
  await written(writer);
  assert.deepEqual(conn.dataStreamIds(), [3, 1]);
});
