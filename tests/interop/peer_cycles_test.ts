// The close-order counts the connection-cycle peer tests assert
// (tests/interop/_peer_cycles.ts): each client takes the orders round robin.
import assert from "node:assert/strict";
import { expectedCloses } from "./_peer_cycles.ts";

Deno.test("expectedCloses() counts the round robin of close orders", () => {
  assert.deepEqual(expectedCloses(1000), { cancel: 334, open: 333, graceful: 333 });
  assert.deepEqual(expectedCloses(600), { cancel: 200, open: 200, graceful: 200 });
  assert.deepEqual(expectedCloses(2), { cancel: 1, open: 1 });
  assert.deepEqual(expectedCloses(0), {});
});
