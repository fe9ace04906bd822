// A live watch keeps nothing of its initial list: a suspended generator
// keeps its variables, and the last batch (its items and the pod versions
// they name) lived as long as the watcher. Needs a collector it can call, so
// it runs in a Deno of its own.
import assert from "node:assert/strict";

const PROBE = new URL("./_last_batch_probe.ts", import.meta.url).pathname;

Deno.test("a live watch no longer holds its initial list nor the batch of it it gave out", async () => {
  const run = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--frozen", "--allow-read", "--allow-env", "--v8-flags=--expose-gc", PROBE],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(run.success, new TextDecoder().decode(run.stderr));
  const seen = JSON.parse(new TextDecoder().decode(run.stdout)) as {
    live: boolean;
    list: boolean;
    control: boolean;
  };
  assert.equal(seen.control, true, "the probe sees a generator that keeps its batch");
  assert.equal(seen.live, false, "the live watch still holds its last initial batch");
  assert.equal(seen.list, false, "the live watch still holds the list it started from");
});
