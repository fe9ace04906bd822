// The table of a connection's open streams: the same answers as a Map through
// long runs of streams opened and closed, with ids that collide in its slots.
import assert from "node:assert/strict";
import { StreamTable } from "../../src/h2/_stream_table.ts";

/** A small deterministic generator (xorshift32), so that a failure repeats. */
function random(seed: number): () => number {
  let x = seed;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

/** Every answer of the table against a Map holding the same entries. */
function assertSame(table: StreamTable<{ id: number }>, map: Map<number, { id: number }>): void {
  assert.equal(table.size, map.size);
  for (const [id, stream] of map) assert.equal(table.get(id), stream, `stream ${id}`);
  assert.deepEqual(table.values(), [...map.keys()].sort((a, b) => a - b).map((id) => map.get(id)));
}

Deno.test("StreamTable finds, counts, replaces and forgets streams by id", () => {
  const table = new StreamTable<{ name: string }>();
  const a = { name: "a" };
  const b = { name: "b" };
  table.set(3, a);
  table.set(1, b);
  assert.equal(table.size, 2);
  assert.equal(table.get(3), a);
  assert.equal(table.get(1), b);
  assert.equal(table.get(5), undefined);
  assert.deepEqual(table.values(), [b, a], "by ascending id");
  table.set(3, b);
  assert.equal(table.size, 2, "an id set again is not counted twice");
  assert.equal(table.get(3), b);
  assert.equal(table.delete(1), true);
  assert.equal(table.delete(1), false);
  assert.equal(table.size, 1);
  assert.equal(table.get(1), undefined);
  table.clear();
  assert.equal(table.size, 0);
  assert.equal(table.get(3), undefined);
  assert.deepEqual(table.values(), []);
});

Deno.test("StreamTable refuses what is not a stream id", () => {
  const table = new StreamTable<object>();
  for (const id of [0, -1, 1.5, 2 ** 31, NaN]) {
    assert.throws(() => table.set(id, {}), RangeError, `id ${id}`);
  }
  assert.equal(table.size, 0);
  assert.equal(table.get(0), undefined);
});

Deno.test("StreamTable agrees with a Map through 200 000 random opens and closes", () => {
  const next = random(0x5eed);
  const table = new StreamTable<{ id: number }>();
  const map = new Map<number, { id: number }>();
  let nextId = 1;
  for (let step = 0; step < 200_000; step++) {
    // Up to ~40 open at once: the table grows past its first slots, and
    // runs of neighbours form and break as streams close out of order.
    if (map.size < 40 && next() < 0.55) {
      // Mostly new client ids, sometimes an id far ahead or a server's even id.
      const id = next() < 0.9 ? (nextId += 2) : 1 + Math.floor(next() * 0x7ffffffe);
      const stream = { id };
      table.set(id, stream);
      map.set(id, stream);
    } else if (map.size > 0) {
      const ids = [...map.keys()];
      const id = ids[Math.floor(next() * ids.length)]!;
      assert.equal(table.delete(id), true);
      map.delete(id);
    }
    if (step % 97 === 0) assertSame(table, map);
    if (step % 20_011 === 0) {
      assert.equal(table.delete(nextId + 1), false, "an id never set is not there");
    }
  }
  assertSame(table, map);
});

Deno.test("StreamTable keeps its entries findable when every id lands in the same run", () => {
  // Ids a multiple of 2^16 apart share their low bits; whatever the hash
  // makes of them, deleting from the middle of a run must keep the rest.
  const table = new StreamTable<{ id: number }>();
  const map = new Map<number, { id: number }>();
  const ids = Array.from({ length: 64 }, (_, i) => 1 + i * 65_536);
  for (const id of ids) {
    const stream = { id };
    table.set(id, stream);
    map.set(id, stream);
  }
  assertSame(table, map);
  for (const id of ids.filter((_, i) => i % 3 !== 2)) {
    table.delete(id);
    map.delete(id);
    assertSame(table, map);
  }
});

Deno.test("StreamTable's values can be walked while the table changes", () => {
  const table = new StreamTable<{ id: number }>();
  const streams = [5, 1, 3].map((id) => ({ id }));
  for (const stream of streams) table.set(stream.id, stream);
  const seen = [];
  for (const stream of table.values()) {
    seen.push(stream.id);
    table.delete(stream.id);
  }
  assert.deepEqual(seen, [1, 3, 5]);
  assert.equal(table.size, 0);
});

Deno.test("StreamTable's forEach visits each stream once", () => {
  const table = new StreamTable<{ id: number }>();
  const streams = Array.from({ length: 20 }, (_, i) => ({ id: 1 + 2 * i }));
  for (const stream of streams) table.set(stream.id, stream);
  for (const stream of streams.slice(0, 7)) table.delete(stream.id);
  const seen: number[] = [];
  table.forEach((stream) => seen.push(stream.id));
  assert.deepEqual(seen.sort((a, b) => a - b), streams.slice(7).map((s) => s.id));
});
