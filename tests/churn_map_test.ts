// The map that holds a connection's open streams and a watcher's pending
// events: what its users ask of it, through long runs of keys set and deleted.
import assert from "node:assert/strict";
import { ChurnMap } from "../src/churn_map.ts";

Deno.test("ChurnMap finds, counts and forgets values by key", () => {
  const map = new ChurnMap<number, string>();
  map.set(1, "a");
  map.set(3, "b");
  assert.equal(map.size, 2);
  assert.equal(map.get(1), "a");
  assert.equal(map.get(3), "b");
  assert.equal(map.get(5), undefined);
  assert.deepEqual(map.values(), ["a", "b"]);
  map.set(3, "c");
  assert.equal(map.size, 2, "a key set again is not counted twice");
  assert.equal(map.get(3), "c");
  assert.equal(map.delete(1), true);
  assert.equal(map.delete(1), false);
  assert.equal(map.size, 1);
  assert.equal(map.get(1), undefined);
  map.clear();
  assert.equal(map.size, 0);
  assert.deepEqual(map.values(), []);
});

Deno.test("ChurnMap keeps only what is held through 100 000 stream ids set and deleted", () => {
  const map = new ChurnMap<number, { id: number }>();
  const open: { id: number }[] = [];
  for (let id = 1; id < 200_000; id += 2) {
    const stream = { id };
    map.set(id, stream);
    open.push(stream);
    // Four requests in flight, as h2load -m 4.
    if (open.length > 4) map.delete(open.shift()!.id);
  }
  assert.equal(map.size, 4);
  assert.deepEqual(map.values(), open);
  for (const stream of open) assert.equal(map.get(stream.id), stream);
  assert.equal(map.get(1), undefined);
});

Deno.test("ChurnMap takes any pod UID as a key, names of Object.prototype and numbers included", () => {
  const map = new ChurnMap<string, number>();
  const uids = ["__proto__", "constructor", "toString", "hasOwnProperty", "12", "0", "b7c1-uid"];
  uids.forEach((uid, i) => map.set(uid, i));
  assert.equal(map.size, uids.length);
  uids.forEach((uid, i) => assert.equal(map.get(uid), i));
  assert.equal(map.get("valueOf"), undefined);
  // Integer-like keys first, ascending, then the others as they were set.
  assert.deepEqual(map.values(), [5, 4, 0, 1, 2, 3, 6]);
  for (const uid of uids) assert.equal(map.delete(uid), true);
  assert.equal(map.size, 0);
  for (let i = 0; i < 50_000; i++) {
    map.set(`uid-${i}`, i);
    if (i >= 3) map.delete(`uid-${i - 3}`);
  }
  assert.deepEqual(map.values(), [49_997, 49_998, 49_999]);
});

Deno.test("ChurnMap's values can be walked while the map changes", () => {
  const map = new ChurnMap<number, number>();
  for (const id of [1, 3, 5]) map.set(id, id);
  const seen = [];
  for (const value of map.values()) {
    seen.push(value);
    map.delete(value);
  }
  assert.deepEqual(seen, [1, 3, 5]);
  assert.equal(map.size, 0);
});
