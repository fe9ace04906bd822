import assert from "node:assert/strict";
import { FlowWindow } from "../../src/h2/flow_window.ts";
import { MAX_INT31 } from "../../src/h2/frames.ts";

Deno.test("FlowWindow starts at its size and consume() takes from it", () => {
  const window = new FlowWindow(65_535);
  assert.equal(window.size, 65_535);
  window.consume(65_535);
  assert.equal(window.size, 0);
});

Deno.test("FlowWindow.consume() may take it below zero", () => {
  const window = new FlowWindow(10);
  window.consume(15);
  assert.equal(window.size, -5);
});

Deno.test("FlowWindow.grow() adds up to 2^31 - 1 and refuses one byte more", async (t) => {
  const cases = [
    { name: "from 0 by 1", start: 0, delta: 1, ok: true, size: 1 },
    {
      name: "exactly to 2^31 - 1",
      start: 65_535,
      delta: MAX_INT31 - 65_535,
      ok: true,
      size: MAX_INT31,
    },
    {
      name: "one past 2^31 - 1",
      start: 65_535,
      delta: MAX_INT31 - 65_534,
      ok: false,
      size: 65_535,
    },
    { name: "at the top by 1", start: MAX_INT31, delta: 1, ok: false, size: MAX_INT31 },
    { name: "by a negative delta", start: 100, delta: -150, ok: true, size: -50 },
    { name: "from negative back up", start: -50, delta: 60, ok: true, size: 10 },
    {
      name: "from negative to 2^31 - 1",
      start: -50,
      delta: MAX_INT31 + 50,
      ok: true,
      size: MAX_INT31,
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const window = new FlowWindow(c.start);
      assert.equal(window.grow(c.delta), c.ok);
      assert.equal(window.size, c.size);
    });
  }
});
