// The send windows: WINDOW_UPDATE and SETTINGS_INITIAL_WINDOW_SIZE grow
// them up to 2^31 - 1 (RFC 9113 section 6.9.1), DATA takes from both.
import assert from "node:assert/strict";
import { SendFlow } from "../../src/h2/_send_flow.ts";
import { StreamStore } from "../../src/h2/_stream_store.ts";
import { ConnectionError, H2_ERROR, StreamError } from "../../src/h2/errors.ts";
import { MAX_INT31 } from "../../src/h2/frames.ts";
import { INITIAL_SETTINGS } from "../../src/h2/settings.ts";
import { Http2Stream, type StreamHost } from "../../src/h2/stream.ts";
import { receiveWindowUpdate } from "./_send_side.ts";

const IDLE_HOST: StreamHost = {
  schedule: () => {},
  resetStream: () => {},
  released: () => {},
  localEnded: () => {},
};

/** A server's flow and store, with stream 1 open. */
function setUp(): {
  flow: SendFlow;
  streams: StreamStore;
  stream: Http2Stream;
} {
  const flow = new SendFlow();
  const streams = new StreamStore("server");
  assert.equal(streams.acceptPeerStream(1, false, MAX_INT31, 10), true);
  const stream = new Http2Stream(1, IDLE_HOST, INITIAL_SETTINGS.initialWindowSize, 1 << 20);
  streams.set(1, stream);
  return { flow, streams, stream };
}

function update(
  s: ReturnType<typeof setUp>,
  streamId: number,
  increment: number,
): ReturnType<SendFlow["onWindowUpdate"]> {
  return receiveWindowUpdate(s.flow, s.streams, streamId, increment);
}

/** Asserts `run` throws a `kind` error with `code`. */
function throwsCode(
  run: () => void,
  kind: typeof ConnectionError | typeof StreamError,
  code: number,
): void {
  assert.throws(run, (e) => e instanceof kind && e.code === code);
}

Deno.test("SendFlow grows a window to 2^31 - 1 and refuses one byte more", async (t) => {
  const cases = [
    { name: "the connection's", streamId: 0, kind: ConnectionError, wakes: "every stream" },
    { name: "a stream's, on that stream", streamId: 1, kind: StreamError, wakes: "the stream" },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const s = setUp();
      const size = () => c.streamId === 0 ? s.flow.connectionWindow : s.stream.sendWindow;
      const woken = update(s, c.streamId, MAX_INT31 - 65_535);
      assert.equal(woken, c.streamId === 0 ? "connection" : s.stream, `it wakes ${c.wakes}`);
      assert.equal(size(), MAX_INT31);
      throwsCode(() => update(s, c.streamId, 1), c.kind, H2_ERROR.FLOW_CONTROL_ERROR);
      assert.equal(size(), MAX_INT31);
    });
  }
});

Deno.test("SendFlow refuses an increment of 0: of the connection, and of a stream", () => {
  const s = setUp();
  throwsCode(() => update(s, 0, 0), ConnectionError, H2_ERROR.PROTOCOL_ERROR);
  throwsCode(() => update(s, 1, 0), StreamError, H2_ERROR.PROTOCOL_ERROR);
});

Deno.test("SendFlow fails an update of an idle stream and ignores one of a closed stream", () => {
  const s = setUp();
  throwsCode(() => update(s, 3, 10), ConnectionError, H2_ERROR.PROTOCOL_ERROR);
  s.streams.remove(s.stream);
  assert.equal(update(s, 1, 10), undefined);
  assert.equal(s.stream.sendWindow, 65_535);
});

Deno.test("SendFlow moves open streams' windows with the initial size, below zero too", () => {
  const s = setUp();
  s.flow.initialWindowChanged(-65_545, s.streams);
  assert.equal(s.stream.sendWindow, -10);
  assert.equal(s.flow.available(s.stream), -10);
  s.flow.initialWindowChanged(110, s.streams);
  assert.equal(s.flow.available(s.stream), 100);
  throwsCode(
    () => s.flow.initialWindowChanged(MAX_INT31, s.streams),
    ConnectionError,
    H2_ERROR.FLOW_CONTROL_ERROR,
  );
});

Deno.test("SendFlow takes DATA from both windows; a stream may send the smaller", () => {
  const s = setUp();
  update(s, 1, 100_000);
  s.flow.consume(s.stream, 65_000);
  assert.equal(s.flow.connectionWindow, 535);
  assert.equal(s.stream.sendWindow, 100_535);
  assert.equal(s.flow.available(s.stream), 535);
});
