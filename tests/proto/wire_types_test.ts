// The generated PodQuery and podresources modules are what the generator
// writes from proto/ today.
import assert from "node:assert/strict";
import { renderWireModule, WIRE_MODULES } from "../../scripts/gen_wire_types.ts";

Deno.test("the generated wire modules match their .proto files", async () => {
  for (const module of WIRE_MODULES) {
    const committed = await Deno.readTextFile(module.out);
    assert.equal(committed, await renderWireModule(module), `run gen:proto (${module.out})`);
  }
});
