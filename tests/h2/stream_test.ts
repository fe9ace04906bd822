import assert from "node:assert/strict";
import { Http2Stream, type StreamHost } from "../../src/h2/stream.ts";

/** A connection stand-in that records what the stream asks of it. */
class FakeHost implements StreamHost {
  scheduled = 0;
  resets: number[] = [];
  releasedBytes: number[] = [];
  schedule(_stream: Http2Stream): void {
    this.scheduled++;
  }
  resetStream(stream: Http2Stream, code: number): void {
    this.resets.push(code);
    stream.finish(code);
  }
  released(_stream: Http2Stream, bytes: number): void {
    this.releasedBytes.push(bytes);
  }
  localEnded(_stream: Http2Stream): void {}
}

function open(): { stream: Http2Stream; host: FakeHost } {
  const host = new FakeHost();
  return { stream: new Http2Stream(1, host, 65_535, 1 << 20), host };
}

/** Writes the first queued item whole, as the connection's writer does. */
function writeNext(stream: Http2Stream): void {
  const item = stream.peek()!;
  if (item.kind === "data") {
    const bytes = item.bytes.byteLength - item.offset;
    item.offset = item.bytes.byteLength;
    stream.wrote(bytes, true);
  } else {
    stream.wrote(0, true);
  }
}

Deno.test("Http2Stream starts open with its two windows", () => {
  const { stream } = open();
  assert.equal(stream.id, 1);
  assert.equal(stream.state, "open");
  assert.equal(stream.sendWindow, 65_535);
  assert.equal(stream.recvWindow, 1 << 20);
  assert.equal(stream.remoteOpen, true);
  assert.equal(stream.localOpen, true);
  assert.equal(stream.queuedBytes, 0);
  assert.equal(stream.closeCode, undefined);
  assert.equal(stream.peek(), undefined);
});

Deno.test("Http2Stream moves through the RFC 9113 states as each side ends", async (t) => {
  const cases = [
    { name: "remote first", order: ["remote", "local"], states: ["halfClosedRemote", "closed"] },
    { name: "local first", order: ["local", "remote"], states: ["halfClosedLocal", "closed"] },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const { stream } = open();
      c.order.forEach((side, i) => {
        if (side === "remote") {
          stream.remoteEnded();
        } else {
          stream.sendHeaders({ fields: [[":status", "200"]] }, true);
          writeNext(stream);
        }
        assert.equal(stream.state, c.states[i]);
      });
    });
  }
});

Deno.test("Http2Stream.remoteOpen and localOpen follow the state", () => {
  const { stream } = open();
  stream.remoteEnded();
  assert.equal(stream.remoteOpen, false);
  assert.equal(stream.localOpen, true);
  const other = open().stream;
  other.sendData(new Uint8Array(1), true);
  // END_STREAM queued: nothing more may be queued, the peer may still send.
  assert.equal(other.localOpen, false);
  assert.equal(other.remoteOpen, true);
  writeNext(other);
  assert.equal(other.state, "halfClosedLocal");
  assert.equal(other.remoteOpen, true);
});

Deno.test("Http2Stream queues headers and data in order and schedules itself", () => {
  const { stream, host } = open();
  const data = new Uint8Array([1, 2, 3]);
  assert.equal(stream.sendHeaders({ fields: [[":status", "200"]] }, false), true);
  assert.equal(stream.sendData(data, false), true);
  assert.equal(stream.sendHeaders({ fields: [["grpc-status", "0"]] }, true), true);
  assert.equal(host.scheduled, 3);
  assert.equal(stream.queuedBytes, 3);
  assert.deepEqual(stream.peek(), {
    kind: "headers",
    fields: [[":status", "200"]],
    block: undefined,
    endStream: false,
  });
  writeNext(stream);
  const item = stream.peek();
  assert.ok(item?.kind === "data");
  assert.equal(item.bytes, data, "queued without a copy");
  writeNext(stream);
  assert.equal(stream.queuedBytes, 0);
  assert.equal(stream.peek()?.kind, "headers");
});

Deno.test("Http2Stream refuses to queue after END_STREAM or once finished", () => {
  const { stream } = open();
  stream.sendData(new Uint8Array(1), true);
  assert.equal(stream.sendData(new Uint8Array(1), false), false);
  assert.equal(stream.sendHeaders({ fields: [] }, true), false);
  const finished = open().stream;
  finished.finish(8);
  assert.equal(finished.sendData(new Uint8Array(1), false), false);
  assert.equal(finished.sendHeaders({ fields: [] }, false), false);
});

Deno.test("Http2Stream.wrote() counts partial DATA writes", () => {
  const { stream } = open();
  stream.sendData(new Uint8Array(100), false);
  const item = stream.peek()!;
  assert.ok(item.kind === "data");
  item.offset = 40;
  stream.wrote(40, false);
  assert.equal(stream.queuedBytes, 60);
  assert.equal(stream.peek(), item);
  item.offset = 100;
  stream.wrote(60, true);
  assert.equal(stream.queuedBytes, 0);
  assert.equal(stream.peek(), undefined);
});

Deno.test("Http2Stream.drained() resolves once the backlog is at most the limit", async () => {
  const { stream } = open();
  for (let i = 0; i < 4; i++) stream.sendData(new Uint8Array(100), false);
  let done = false;
  const drained = stream.drained(150);
  assert.ok(drained, "400 bytes queued: something to wait for");
  const waiting = drained.then(() => done = true);
  writeNext(stream);
  writeNext(stream);
  await Promise.resolve();
  assert.equal(done, false, "200 bytes still queued");
  writeNext(stream);
  await waiting;
  assert.equal(stream.queuedBytes, 100);
});

Deno.test("Http2Stream.drained() has nothing to wait for below the limit or once the stream ends", async () => {
  const { stream } = open();
  assert.equal(stream.drained(0), undefined);
  stream.sendData(new Uint8Array(100), false);
  assert.equal(stream.drained(100), undefined);
  const waiting = stream.drained(10);
  assert.ok(waiting);
  stream.finish(8);
  await waiting;
  assert.equal(stream.queuedBytes, 0);
  assert.equal(stream.drained(0), undefined);
});

Deno.test("Http2Stream.discardUnsentData() drops DATA not yet started and wakes waiters", async () => {
  const { stream } = open();
  stream.sendHeaders({ fields: [[":status", "200"]] }, false);
  stream.sendData(new Uint8Array(100), false);
  stream.sendData(new Uint8Array(50), false);
  writeNext(stream); // the headers
  const started = stream.peek()!;
  assert.ok(started.kind === "data");
  started.offset = 10;
  stream.wrote(10, false);
  const waiting = stream.drained(100);
  stream.discardUnsentData();
  await waiting;
  // The DATA already started stays: a frame cannot be taken back.
  assert.equal(stream.queuedBytes, 90);
  assert.equal(stream.peek(), started);
  stream.sendHeaders({ fields: [["grpc-status", "1"]] }, true);
  writeNext(stream);
  assert.equal(stream.peek()?.kind, "headers");
});

Deno.test("Http2Stream.reset() goes through the connection once", () => {
  const { stream, host } = open();
  stream.sendData(new Uint8Array(10), false);
  stream.reset(8);
  stream.reset(2);
  assert.deepEqual(host.resets, [8]);
  assert.equal(stream.state, "closed");
  assert.equal(stream.closeCode, 8);
  assert.equal(stream.queuedBytes, 0);
  assert.equal(stream.peek(), undefined);
});

Deno.test("Http2Stream.release() reports consumed bytes until the stream is finished", () => {
  const { stream, host } = open();
  stream.release(10);
  stream.release(0);
  stream.finish(undefined);
  stream.release(5);
  assert.deepEqual(host.releasedBytes, [10]);
});

Deno.test("Http2Stream.finish() tells the listener once, with the code", async (t) => {
  for (const code of [undefined, 0, 8]) {
    await t.step(String(code), () => {
      const { stream } = open();
      const heard: (number | undefined)[] = [];
      stream.listener = { onClose: (c) => heard.push(c) };
      stream.finish(code);
      stream.finish(2);
      assert.deepEqual(heard, [code]);
      assert.equal(stream.closeCode, code);
      assert.equal(stream.state, "closed");
      assert.equal(stream.localOpen, false);
      assert.equal(stream.remoteOpen, false);
    });
  }
});
