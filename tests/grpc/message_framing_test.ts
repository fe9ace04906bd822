import assert from "node:assert/strict";
import { concatBytes } from "../../src/bytes_concat.ts";
import {
  FramedMessage,
  frameMessage,
  frameMessageEndingWith,
  MESSAGE_PREFIX_BYTES,
  MessageReader,
} from "../../src/grpc/message_framing.ts";
import { GrpcError, STATUS } from "../../src/grpc/status.ts";

function bytes(n: number, seed: number): Uint8Array {
  return Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff);
}

function readAll(reader: MessageReader, chunks: readonly Uint8Array[]): Uint8Array[] {
  const got: Uint8Array[] = [];
  for (const chunk of chunks) reader.push(chunk, (m) => got.push(m));
  return got;
}

Deno.test("frameMessage() writes a zero flag, a big-endian length and the message", () => {
  const framed = frameMessage(new Uint8Array([7, 8, 9]));
  assert.ok(framed instanceof FramedMessage);
  assert.deepEqual([...framed.bytes], [0, 0, 0, 0, 3, 7, 8, 9]);
  assert.deepEqual([...framed.message], [7, 8, 9]);
  assert.equal(MESSAGE_PREFIX_BYTES, 5);
});

Deno.test("frameMessage() of an empty message is the prefix alone", () => {
  assert.deepEqual([...frameMessage(new Uint8Array(0)).bytes], [0, 0, 0, 0, 0]);
});

Deno.test("frameMessage() writes lengths above 2^24 in four bytes", () => {
  const framed = frameMessage(new Uint8Array(0x01020304));
  assert.deepEqual([...framed.bytes.subarray(0, 5)], [0, 1, 2, 3, 4]);
});

Deno.test("FramedMessage.message is a view of its bytes after the prefix", () => {
  const framed = new FramedMessage(new Uint8Array([0, 0, 0, 0, 2, 5, 6]));
  assert.deepEqual([...framed.message], [5, 6]);
  assert.equal(framed.message.buffer, framed.bytes.buffer);
});

Deno.test("frameMessageEndingWith() keeps its end by reference and frames the same bytes as frameMessage()", () => {
  const sizes: [number, number][] = [[0, 0], [0, 5], [3, 0], [3, 300], [200, 70_000]];
  for (const [startBytes, endBytes] of sizes) {
    const start = bytes(startBytes, 1);
    const end = bytes(endBytes, 2);
    const framed = frameMessageEndingWith(start, end);
    assert.equal(framed.tail, end.byteLength === 0 ? framed.tail : end, "the end is not copied");
    assert.deepEqual(framed.bytes, frameMessage(concatBytes([start, end])).bytes);
    assert.deepEqual(framed.message, concatBytes([start, end]));
    assert.equal(framed.byteLength, MESSAGE_PREFIX_BYTES + startBytes + endBytes);
    assert.equal(framed.messageBytes, startBytes + endBytes);
    assert.equal(framed.head.byteLength, MESSAGE_PREFIX_BYTES + startBytes);
  }
});

Deno.test("MessageReader reassembles messages split across two chunks at every offset", () => {
  const messages = [bytes(3, 1), new Uint8Array(0), bytes(40, 2), bytes(1, 3)];
  const wire = concatBytes(messages.map((m) => frameMessage(m).bytes));
  for (let cut = 0; cut <= wire.byteLength; cut++) {
    const reader = new MessageReader(1024);
    const got = readAll(reader, [wire.subarray(0, cut), wire.subarray(cut)]);
    assert.deepEqual(got, messages, `cut at ${cut}`);
    assert.equal(reader.partial, false, `cut at ${cut}`);
  }
});

Deno.test("MessageReader reassembles messages split across three chunks at every pair of offsets", () => {
  const messages = [bytes(6, 4), new Uint8Array(0), bytes(9, 5)];
  const wire = concatBytes(messages.map((m) => frameMessage(m).bytes));
  for (let a = 0; a <= wire.byteLength; a++) {
    for (let b = a; b <= wire.byteLength; b++) {
      const reader = new MessageReader(1024);
      const got = readAll(reader, [wire.subarray(0, a), wire.subarray(a, b), wire.subarray(b)]);
      assert.deepEqual(got, messages, `cuts at ${a} and ${b}`);
    }
  }
});

Deno.test("MessageReader reads a stream fed one byte at a time", () => {
  const messages = [bytes(17, 6), new Uint8Array(0), new Uint8Array(0), bytes(2, 7)];
  const wire = concatBytes(messages.map((m) => frameMessage(m).bytes));
  const reader = new MessageReader(1024);
  const got = readAll(reader, [...wire].map((b) => new Uint8Array([b])));
  assert.deepEqual(got, messages);
});

Deno.test("MessageReader.partial is true from the first prefix byte until the message is whole", () => {
  const wire = frameMessage(bytes(4, 8)).bytes;
  const reader = new MessageReader(1024);
  assert.equal(reader.partial, false);
  for (let i = 0; i < wire.byteLength - 1; i++) {
    reader.push(wire.subarray(i, i + 1), () => assert.fail("not complete yet"));
    assert.equal(reader.partial, true, `after ${i + 1} bytes`);
  }
  let got: Uint8Array | undefined;
  reader.push(wire.subarray(wire.byteLength - 1), (m) => got = m);
  assert.deepEqual(got, bytes(4, 8));
  assert.equal(reader.partial, false);
});

Deno.test("MessageReader hands out copies: the chunk may be reused after push()", () => {
  const chunk = frameMessage(new Uint8Array([1, 2, 3])).bytes;
  const reader = new MessageReader(1024);
  const [got] = readAll(reader, [chunk]);
  chunk.fill(0);
  assert.deepEqual([...got!], [1, 2, 3]);
});

Deno.test("MessageReader's copies of whole messages stay intact through thousands of later copies, small and large", () => {
  // Small messages share slabs: no later message, and no reuse of the read buffer, may touch one.
  const reader = new MessageReader(4096);
  const chunk = new Uint8Array(MESSAGE_PREFIX_BYTES + 1024);
  const kept: { got: Uint8Array; want: Uint8Array }[] = [];
  for (let i = 0; i < 3000; i++) {
    const want = bytes((i * 37) % 700, i);
    chunk.set(frameMessage(want).bytes);
    reader.push(chunk.subarray(0, MESSAGE_PREFIX_BYTES + want.byteLength), (got) => {
      kept.push({ got, want });
    });
    chunk.fill(0xee);
  }
  assert.equal(kept.length, 3000);
  for (const [i, { got, want }] of kept.entries()) assert.deepEqual(got, want, `message ${i}`);
});

Deno.test("MessageReader accepts a message exactly at the size limit", () => {
  const reader = new MessageReader(100);
  assert.deepEqual(readAll(reader, [frameMessage(bytes(100, 9)).bytes]), [bytes(100, 9)]);
});

Deno.test("MessageReader refuses a message above the limit as soon as its prefix arrives", () => {
  const reader = new MessageReader(100);
  // Only the prefix: the 101 bytes of the body never need to arrive.
  const prefix = frameMessage(bytes(101, 10)).bytes.subarray(0, MESSAGE_PREFIX_BYTES);
  assert.throws(
    () => reader.push(prefix, () => assert.fail("no message expected")),
    (err: unknown) =>
      err instanceof GrpcError && err.code === STATUS.RESOURCE_EXHAUSTED &&
      err.message === "Cannot accept a message of 101 bytes: the limit is 100",
  );
});

Deno.test("MessageReader refuses a 4 GiB length without allocating it", () => {
  const reader = new MessageReader(16 << 20);
  assert.throws(
    () => reader.push(new Uint8Array([0, 0xff, 0xff, 0xff, 0xff]), () => {}),
    (err: unknown) => err instanceof GrpcError && err.code === STATUS.RESOURCE_EXHAUSTED,
  );
});

Deno.test("MessageReader refuses a compressed message with UNIMPLEMENTED", async (t) => {
  for (const flag of [1, 2, 0x80]) {
    await t.step(`flag ${flag}`, () => {
      const wire = frameMessage(bytes(3, 11)).bytes;
      wire[0] = flag;
      assert.throws(
        () => new MessageReader(1024).push(wire, () => assert.fail("no message expected")),
        (err: unknown) =>
          err instanceof GrpcError && err.code === STATUS.UNIMPLEMENTED &&
          /compressed/.test(err.message),
      );
    });
  }
});

Deno.test("MessageReader delivers the messages before a compressed one", () => {
  const bad = frameMessage(bytes(2, 12)).bytes;
  bad[0] = 1;
  const wire = concatBytes([frameMessage(bytes(3, 13)).bytes, bad]);
  const got: Uint8Array[] = [];
  assert.throws(() => new MessageReader(1024).push(wire, (m) => got.push(m)), GrpcError);
  assert.deepEqual(got, [bytes(3, 13)]);
});
