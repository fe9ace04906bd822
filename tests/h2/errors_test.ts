import assert from "node:assert/strict";
import { ConnectionError, H2_ERROR, h2ErrorName, StreamError } from "../../src/h2/errors.ts";

Deno.test("H2_ERROR holds the 14 RFC 9113 error codes", () => {
  assert.deepEqual(Object.values(H2_ERROR), Array.from({ length: 14 }, (_, i) => i));
  assert.equal(H2_ERROR.ENHANCE_YOUR_CALM, 0xb);
  assert.equal(H2_ERROR.HTTP_1_1_REQUIRED, 0xd);
});

Deno.test("h2ErrorName() names known codes and shows unknown ones in hex", async (t) => {
  const cases: [number, string][] = [
    [0, "NO_ERROR"],
    [1, "PROTOCOL_ERROR"],
    [7, "REFUSED_STREAM"],
    [8, "CANCEL"],
    [0xb, "ENHANCE_YOUR_CALM"],
    [0xd, "HTTP_1_1_REQUIRED"],
    [0xe, "0xe"],
    [0x1f, "0x1f"],
    [0xffffffff, "0xffffffff"],
  ];
  for (const [code, name] of cases) {
    await t.step(name, () => assert.equal(h2ErrorName(code), name));
  }
});

Deno.test("ConnectionError carries its GOAWAY code", () => {
  const err = new ConnectionError(H2_ERROR.FRAME_SIZE_ERROR, "PING is not 8 bytes");
  assert.ok(err instanceof Error);
  assert.equal(err.name, "ConnectionError");
  assert.equal(err.code, H2_ERROR.FRAME_SIZE_ERROR);
  assert.equal(err.message, "PING is not 8 bytes");
});

Deno.test("StreamError carries its stream and RST_STREAM code", () => {
  const err = new StreamError(5, H2_ERROR.STREAM_CLOSED, "DATA after END_STREAM");
  assert.ok(err instanceof Error);
  assert.ok(!(err instanceof ConnectionError));
  assert.equal(err.name, "StreamError");
  assert.equal(err.streamId, 5);
  assert.equal(err.code, H2_ERROR.STREAM_CLOSED);
  assert.equal(err.message, "DATA after END_STREAM");
});
