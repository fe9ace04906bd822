// The map that holds a watcher's pending events by UID: what its user asks of
// it, through long runs of keys set and deleted.
import assert from "node:assert/strict";
import { ChurnMap } from "../src/churn_map.ts";

Deno.test("ChurnMap finds, counts and forgets values by key", () => {
  const map = new ChurnMap<string, string>();
  map.set("u1", "a");
  map.set("u3", "b");
  assert.equal(map.size, 2);
  assert.equal(map.get("u1"), "a");
  assert.equal(map.get("u3"), "b");
  assert.equal(map.get("u5"), undefined);
  assert.deepEqual(map.values(), ["a", "b"]);
  map.set("u3", "c");
  assert.equal(map.size, 2, "a key set again is not counted twice");
  assert.equal(map.get("u3"), "c");
  assert.equal(map.delete("u1"), true);
  assert.equal(map.delete("u1"), false);
  assert.equal(map.size, 1);
  assert.equal(map.get("u1"), undefined);
  map.clear();
  assert.equal(map.size, 0);
  assert.deepEqual(map.values(), []);
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
  const map = new ChurnMap<string, string>();
  for (const uid of ["a", "b", "c"]) map.set(uid, uid);
  const seen = [];
  for (const value of map.values()) {
    seen.push(value);
    map.delete(value);
  }
  assert.deepEqual(seen, ["a", "b", "c"]);
  assert.equal(map.size, 0);
});
