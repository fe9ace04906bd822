import assert from "node:assert/strict";
import { compareUids, diffPods, type StoredInput } from "../../src/cache/diff.ts";
import type { PodSnapshot, PodUid } from "../../src/model/pod.ts";
import { makeSnapshot } from "../_fixtures/pods.ts";

function storedOf(snapshots: readonly PodSnapshot[]): Map<PodUid, StoredInput> {
  return new Map(snapshots.map((s) => [s.uid, { input: s.pod }]));
}

const a = makeSnapshot({ uid: "a", name: "a" });
const b = makeSnapshot({ uid: "b", name: "b" });
const c = makeSnapshot({ uid: "c", name: "c" });

Deno.test("diffPods() compares a view with the stored pods by UID and object identity", async (t) => {
  const cases: {
    name: string;
    stored: readonly PodSnapshot[];
    view: readonly PodSnapshot[];
    added: string[];
    replaced: string[];
    removed: string[];
    duplicates?: number;
  }[] = [
    {
      name: "nothing stored, nothing seen",
      stored: [],
      view: [],
      added: [],
      replaced: [],
      removed: [],
    },
    {
      name: "a new UID is added",
      stored: [a],
      view: [a, b],
      added: ["b"],
      replaced: [],
      removed: [],
    },
    {
      name: "the same object is unchanged, without looking inside",
      stored: [a, b],
      view: [b, a],
      added: [],
      replaced: [],
      removed: [],
    },
    {
      name: "a different object for a stored UID is replaced, even with equal content",
      stored: [a],
      view: [{ uid: "a", pod: structuredClone(a.pod) }],
      added: [],
      replaced: ["a"],
      removed: [],
    },
    {
      name: "a stored UID missing from the view is removed, UIDs sorted",
      stored: [c, a, b],
      view: [b],
      added: [],
      replaced: [],
      removed: ["a", "c"],
    },
    {
      name: "added keeps the view's order",
      stored: [],
      view: [c, a, b],
      added: ["c", "a", "b"],
      replaced: [],
      removed: [],
    },
    {
      name: "a repeated UID counts once, the last snapshot wins",
      stored: [a],
      view: [a, { uid: "a", pod: structuredClone(a.pod) }],
      added: [],
      replaced: ["a"],
      removed: [],
      duplicates: 1,
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const diff = diffPods(storedOf(c.stored), c.view);
      assert.deepEqual(diff.added.map((s) => s.uid), c.added);
      assert.deepEqual(diff.replaced.map((s) => s.uid), c.replaced);
      assert.deepEqual([...diff.removed], c.removed);
      assert.equal(diff.duplicates, c.duplicates ?? 0);
    });
  }
});

Deno.test("compareUids() orders UIDs by code unit", () => {
  assert.deepEqual(["b", "B", "a", "ab"].sort(compareUids), ["B", "a", "ab", "b"]);
});
