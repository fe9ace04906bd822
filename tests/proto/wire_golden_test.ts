// The bytes of PodQuery and podresources messages, pinned: the fixture was
// written by the hand-written encoders before the codecs were driven by the
// descriptors, so an old client reads exactly what it read then.
import assert from "node:assert/strict";
import { GOLDEN_FILE, goldenHex } from "./_wire_golden_cases.ts";

Deno.test("PodQuery and podresources messages encode to the pinned bytes", async () => {
  const pinned = JSON.parse(await Deno.readTextFile(GOLDEN_FILE)) as Record<string, string>;
  const now = goldenHex();
  assert.deepEqual(Object.keys(now).sort(), Object.keys(pinned).sort());
  for (const [name, hex] of Object.entries(pinned)) assert.equal(now[name], hex, name);
});
