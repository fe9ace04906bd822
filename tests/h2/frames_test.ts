import assert from "node:assert/strict";
import {
  buildFrame,
  CLIENT_PREFACE,
  FLAG,
  FRAME_HEADER_BYTES,
  FRAME_TYPE,
  goawayFrame,
  MAX_INT31,
  pingFrame,
  readFrameHeader,
  readUint31,
  readUint32,
  rstStreamFrame,
  SETTINGS_ACK,
  settingsFrame,
  windowUpdateFrame,
  writeFrameHeader,
} from "../../src/h2/frames.ts";

Deno.test("CLIENT_PREFACE is the RFC 9113 connection preface", () => {
  assert.equal(new TextDecoder().decode(CLIENT_PREFACE), "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
  assert.equal(CLIENT_PREFACE.byteLength, 24);
  assert.equal(MAX_INT31, 2 ** 31 - 1);
  assert.equal(FRAME_HEADER_BYTES, 9);
});

Deno.test("writeFrameHeader() and readFrameHeader() round-trip every field", async (t) => {
  const cases = [
    { name: "empty SETTINGS on stream 0", length: 0, type: FRAME_TYPE.SETTINGS, flags: 0, id: 0 },
    {
      name: "DATA with END_STREAM on stream 1",
      length: 16_384,
      type: FRAME_TYPE.DATA,
      flags: FLAG.END_STREAM,
      id: 1,
    },
    {
      name: "largest length, all flags, largest stream id",
      length: 0xffffff,
      type: FRAME_TYPE.HEADERS,
      flags: 0xff,
      id: MAX_INT31,
    },
    { name: "unknown frame type", length: 258, type: 0xfa, flags: 0x10, id: 0x01020304 },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const bytes = new Uint8Array(3 + FRAME_HEADER_BYTES);
      writeFrameHeader(bytes, 3, c.length, c.type, c.flags, c.id);
      assert.deepEqual(readFrameHeader(bytes, 3), {
        length: c.length,
        type: c.type,
        flags: c.flags,
        streamId: c.id,
      });
    });
  }
});

Deno.test("writeFrameHeader() lays the header out big-endian", () => {
  const bytes = new Uint8Array(FRAME_HEADER_BYTES);
  writeFrameHeader(bytes, 0, 0x010203, 0x04, 0x05, 0x06070809);
  assert.deepEqual([...bytes], [1, 2, 3, 4, 5, 6, 7, 8, 9]);
});

Deno.test("writeFrameHeader() clears the reserved bit of the stream id", () => {
  const bytes = new Uint8Array(FRAME_HEADER_BYTES);
  writeFrameHeader(bytes, 0, 0, FRAME_TYPE.DATA, 0, 0x80000001);
  assert.deepEqual([...bytes.subarray(5)], [0, 0, 0, 1]);
});

Deno.test("readFrameHeader() ignores the reserved bit of the stream id", () => {
  const bytes = new Uint8Array([0, 0, 4, FRAME_TYPE.RST_STREAM, 0, 0x80, 0, 0, 3]);
  assert.equal(readFrameHeader(bytes, 0).streamId, 3);
});

Deno.test("readUint32() reads unsigned and readUint31() drops the top bit", async (t) => {
  const cases = [
    { name: "zero", bytes: [0, 0, 0, 0], u32: 0, u31: 0 },
    { name: "one", bytes: [0, 0, 0, 1], u32: 1, u31: 1 },
    { name: "2^31 - 1", bytes: [0x7f, 0xff, 0xff, 0xff], u32: MAX_INT31, u31: MAX_INT31 },
    { name: "2^31", bytes: [0x80, 0, 0, 0], u32: 2 ** 31, u31: 0 },
    { name: "2^32 - 1", bytes: [0xff, 0xff, 0xff, 0xff], u32: 2 ** 32 - 1, u31: MAX_INT31 },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const bytes = new Uint8Array([9, ...c.bytes]);
      assert.equal(readUint32(bytes, 1), c.u32);
      assert.equal(readUint31(bytes, 1), c.u31);
    });
  }
});

Deno.test("buildFrame() copies the payload after the header", () => {
  const payload = new Uint8Array([1, 2, 3]);
  const frame = buildFrame(FRAME_TYPE.DATA, FLAG.END_STREAM, 5, payload);
  payload[0] = 99;
  assert.deepEqual(readFrameHeader(frame, 0), {
    length: 3,
    type: FRAME_TYPE.DATA,
    flags: FLAG.END_STREAM,
    streamId: 5,
  });
  assert.deepEqual([...frame.subarray(FRAME_HEADER_BYTES)], [1, 2, 3]);
});

Deno.test("buildFrame() without a payload is a bare header", () => {
  const frame = buildFrame(FRAME_TYPE.SETTINGS, FLAG.ACK, 0);
  assert.equal(frame.byteLength, FRAME_HEADER_BYTES);
  assert.deepEqual(frame, SETTINGS_ACK);
});

Deno.test("settingsFrame() writes 6 bytes per setting, in order", () => {
  const frame = settingsFrame([[0x3, 100], [0x4, 0xffffffff], [0xabcd, 1]]);
  const h = readFrameHeader(frame, 0);
  assert.deepEqual(h, { length: 18, type: FRAME_TYPE.SETTINGS, flags: 0, streamId: 0 });
  const p = frame.subarray(FRAME_HEADER_BYTES);
  assert.deepEqual([...p.subarray(0, 6)], [0, 3, 0, 0, 0, 100]);
  assert.deepEqual([...p.subarray(6, 12)], [0, 4, 0xff, 0xff, 0xff, 0xff]);
  assert.deepEqual([...p.subarray(12, 18)], [0xab, 0xcd, 0, 0, 0, 1]);
});

Deno.test("settingsFrame() with no settings is an empty SETTINGS frame", () => {
  assert.deepEqual(
    settingsFrame([]),
    new Uint8Array([0, 0, 0, FRAME_TYPE.SETTINGS, 0, 0, 0, 0, 0]),
  );
});

Deno.test("SETTINGS_ACK is an empty SETTINGS frame with ACK", () => {
  assert.deepEqual(
    SETTINGS_ACK,
    new Uint8Array([0, 0, 0, FRAME_TYPE.SETTINGS, FLAG.ACK, 0, 0, 0, 0]),
  );
});

Deno.test("pingFrame() carries its 8 bytes and sets ACK only for an answer", () => {
  const data = new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]);
  for (const ack of [false, true]) {
    const frame = pingFrame(data, ack);
    assert.deepEqual(readFrameHeader(frame, 0), {
      length: 8,
      type: FRAME_TYPE.PING,
      flags: ack ? FLAG.ACK : 0,
      streamId: 0,
    });
    assert.deepEqual(frame.subarray(FRAME_HEADER_BYTES), data);
  }
});

Deno.test("goawayFrame() carries the last stream id, the code and the debug text", () => {
  const frame = goawayFrame(MAX_INT31, 0xb, "calm down");
  const h = readFrameHeader(frame, 0);
  assert.deepEqual(h, { length: 8 + 9, type: FRAME_TYPE.GOAWAY, flags: 0, streamId: 0 });
  const p = frame.subarray(FRAME_HEADER_BYTES);
  assert.equal(readUint32(p, 0), MAX_INT31);
  assert.equal(readUint32(p, 4), 0xb);
  assert.equal(new TextDecoder().decode(p.subarray(8)), "calm down");
});

Deno.test("goawayFrame() without debug text is 8 bytes and clears the reserved bit", () => {
  const frame = goawayFrame(0x80000007, 0);
  assert.equal(readFrameHeader(frame, 0).length, 8);
  assert.equal(readUint32(frame, FRAME_HEADER_BYTES), 7);
});

Deno.test("goawayFrame() keeps at most 256 characters of debug text", () => {
  const frame = goawayFrame(1, 1, "x".repeat(1000));
  assert.equal(readFrameHeader(frame, 0).length, 8 + 256);
});

Deno.test("rstStreamFrame() carries the stream and the code", () => {
  const frame = rstStreamFrame(7, 0x8);
  assert.deepEqual(readFrameHeader(frame, 0), {
    length: 4,
    type: FRAME_TYPE.RST_STREAM,
    flags: 0,
    streamId: 7,
  });
  assert.equal(readUint32(frame, FRAME_HEADER_BYTES), 8);
});

Deno.test("windowUpdateFrame() carries the increment as 31 bits", async (t) => {
  const cases = [
    { name: "connection, 1 byte", id: 0, increment: 1, wire: 1 },
    { name: "stream, 2^31 - 1", id: 3, increment: MAX_INT31, wire: MAX_INT31 },
    { name: "reserved bit cleared", id: 3, increment: 2 ** 31 + 5, wire: 5 },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const frame = windowUpdateFrame(c.id, c.increment);
      assert.deepEqual(readFrameHeader(frame, 0), {
        length: 4,
        type: FRAME_TYPE.WINDOW_UPDATE,
        flags: 0,
        streamId: c.id,
      });
      assert.equal(readUint32(frame, FRAME_HEADER_BYTES), c.wire);
    });
  }
});
