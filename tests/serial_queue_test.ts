import assert from "node:assert/strict";
import { SerialQueue } from "../src/serial_queue.ts";

Deno.test("SerialQueue runs tasks one at a time, in order, past a failing one", async () => {
  const queue = new SerialQueue();
  const log: string[] = [];
  const gate = Promise.withResolvers<void>();
  const first = queue.run(async () => {
    log.push("first starts");
    await gate.promise;
    log.push("first ends");
    throw new Error("first failed");
  });
  const second = queue.run(() => {
    log.push("second");
    return 2;
  });
  assert.deepEqual(log, ["first starts"], "an idle queue starts its task in the call");
  gate.resolve();
  await assert.rejects(first, /first failed/);
  assert.equal(await second, 2);
  assert.deepEqual(log, ["first starts", "first ends", "second"]);
});
