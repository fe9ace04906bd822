/**
 * Run by watch_retention_test.ts with `--v8-flags=--expose-gc`: whether a
 * live watch still holds the batch of its initial list it gave out, and, as
 * a control that the method sees retention at all, whether a generator that
 * keeps such a batch in a variable is seen holding it. Prints one JSON line.
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

/** Lets the iterator go on (and suspend), then collects and reads the ref. */
async function heldAfterNext(it: AsyncIterator<readonly object[]>): Promise<boolean> {
  const ref = await firstBatchRef(it);
  void it.next();
  for (let i = 0; i < 3; i++) {
    await new Promise((r) => setTimeout(r, 10));
    gc();
  }
  return ref.deref() !== undefined;
}

const c = inProcessCore();
c.apply(["uid-a", "uid-b", "uid-c"].map((uid) => makeSnapshot({ uid, name: uid })));
const watch = c.core.openWatch({
  surface: "v1alpha1",
  selector: SELECT_ALL,
  signal: new AbortController().signal,
});
const live = await heldAfterNext(watch.batches()[Symbol.asyncIterator]());

async function* keeping(): AsyncGenerator<readonly object[]> {
  const batch: object[] = [{}];
  yield batch;
  await new Promise(() => {});
  yield batch;
}
const control = await heldAfterNext(keeping());

await Deno.stdout.write(new TextEncoder().encode(`${JSON.stringify({ live, control })}\n`));
Deno.exit(0);
