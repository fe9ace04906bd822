/**
 * Run by watch_retention_test.ts with `--v8-flags=--expose-gc`: whether a
 * live watch still holds the batch of its initial list it gave out, whether
 * it still holds the list it started from once the cache has moved on, and,
 * as a control that the method sees retention at all, whether a generator
 * that keeps such a batch in a variable is seen holding it. Prints one JSON
 * line.
 *
 * @module
 */

import { SELECT_ALL } from "../../src/query/mod.ts";
import { makeSnapshot } from "../_fixtures/pods.ts";
import { inProcessCore } from "../_support/in_process_core.ts";

const gc = (globalThis as unknown as { gc: () => void }).gc;

/** Takes the first batch in a frame of its own, so that only the WeakRef outlives it. */
async function firstBatchRef(it: AsyncIterator<readonly object[]>): Promise<WeakRef<object>> {
  const first = await it.next();
  return new WeakRef(first.value as object);
}

/** Collects a few times, between turns of the event loop. */
async function collect(): Promise<void> {
  for (let i = 0; i < 3; i++) {
    await new Promise((r) => setTimeout(r, 10));
    gc();
  }
}

/** Lets the iterator go on (and suspend), then collects and reads the ref. */
async function heldAfterNext(it: AsyncIterator<readonly object[]>): Promise<boolean> {
  const ref = await firstBatchRef(it);
  void it.next();
  await collect();
  return ref.deref() !== undefined;
}

/** The cache's list now, in a frame of its own. */
function listRef(): WeakRef<object> {
  return new WeakRef(c.cache.list());
}

const c = inProcessCore();
c.apply(["uid-a", "uid-b", "uid-c"].map((uid) => makeSnapshot({ uid, name: uid })));
const startList = listRef();
const watch = c.core.openWatch({
  surface: "v1alpha1",
  selector: SELECT_ALL,
  signal: new AbortController().signal,
});
const live = await heldAfterNext(watch.batches()[Symbol.asyncIterator]());
// The cache moves on: its list of the watch's start is nobody's now.
c.apply(["uid-a", "uid-d"].map((uid) => makeSnapshot({ uid, name: uid })));
c.cache.list();
await collect();
const list = startList.deref() !== undefined;

async function* keeping(): AsyncGenerator<readonly object[]> {
  const batch: object[] = [{}];
  yield batch;
  await new Promise(() => {});
  yield batch;
}
const control = await heldAfterNext(keeping());

await Deno.stdout.write(new TextEncoder().encode(`${JSON.stringify({ live, list, control })}\n`));
Deno.exit(0);
