// The connection's table of open streams: what the reader, the control frames
// and the connection ask of it, through a long run of streams opened and closed.
import assert from "node:assert/strict";
import { Http2Stream, type StreamHost } from "../../src/h2/stream.ts";
import { StreamTable } from "../../src/h2/stream_table.ts";

const host: StreamHost = { schedule: () => {}, resetStream: () => {}, released: () => {} };
const streamOf = (id: number) => new Http2Stream(id, host, 65_535, 65_535);

Deno.test("StreamTable finds, counts and forgets streams by id", () => {
  const table = new StreamTable();
  const [a, b] = [streamOf(1), streamOf(3)];
  table.set(1, a);
  table.set(3, b);
  assert.equal(table.size, 2);
  assert.equal(table.get(1), a);
  assert.equal(table.get(3), b);
  assert.equal(table.get(5), undefined);
  assert.deepEqual(table.values(), [a, b]);
  const replaced = streamOf(3);
  table.set(3, replaced);
  assert.equal(table.size, 2, "a stream set again under its id is not counted twice");
  assert.equal(table.get(3), replaced);
  assert.equal(table.delete(1), true);
  assert.equal(table.delete(1), false);
  assert.equal(table.size, 1);
  assert.equal(table.get(1), undefined);
  table.clear();
  assert.equal(table.size, 0);
  assert.deepEqual(table.values(), []);
});

Deno.test("StreamTable keeps only the open streams through 100 000 opened and closed", () => {
  const table = new StreamTable();
  const open: Http2Stream[] = [];
  for (let id = 1; id < 200_000; id += 2) {
    const stream = streamOf(id);
    table.set(id, stream);
    open.push(stream);
    // Four requests in flight, as h2load -m 4.
    if (open.length > 4) table.delete(open.shift()!.id);
  }
  assert.equal(table.size, 4);
  assert.deepEqual(table.values(), open);
  for (const stream of open) assert.equal(table.get(stream.id), stream);
  assert.equal(table.get(1), undefined);
});

Deno.test("StreamTable's values can be walked while the table changes", () => {
  const table = new StreamTable();
  for (const id of [1, 3, 5]) table.set(id, streamOf(id));
  const seen = [];
  for (const stream of table.values()) {
    seen.push(stream.id);
    table.delete(stream.id);
  }
  assert.deepEqual(seen, [1, 3, 5]);
  assert.equal(table.size, 0);
});
