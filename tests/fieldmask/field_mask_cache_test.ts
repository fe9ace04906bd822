import assert from "node:assert/strict";
import { FieldMaskCache, FieldMaskError, parseFieldMaskText } from "../../src/fieldmask/mod.ts";
import { TEST_POD_SCHEMA } from "./_schema.ts";

Deno.test("FieldMaskCache compiles a mask once and reuses it", () => {
  const cache = new FieldMaskCache(TEST_POD_SCHEMA);
  const a = cache.parseText("status.phase,metadata.labels");
  assert.equal(cache.parseText("status.phase,metadata.labels"), a);
  assert.equal(cache.size, 1);
  const b = cache.parsePaths(["status.phase", "metadata.labels"]);
  assert.equal(cache.parsePaths(["status.phase", "metadata.labels"]), b);
  assert.equal(b.key, a.key);
  assert.equal(cache.size, 2);
  assert.deepEqual(a, parseFieldMaskText("status.phase,metadata.labels", TEST_POD_SCHEMA));
});

Deno.test("FieldMaskCache evicts the least recently used mask", () => {
  const cache = new FieldMaskCache(TEST_POD_SCHEMA, { maxEntries: 2 });
  const a = cache.parseText("status.phase");
  const b = cache.parseText("status.podIP");
  assert.equal(cache.parseText("status.phase"), a); // a is now the most recent
  cache.parseText("status.hostIP"); // evicts b
  assert.equal(cache.size, 2);
  assert.equal(cache.parseText("status.phase"), a);
  assert.notEqual(cache.parseText("status.podIP"), b);
  cache.clear();
  assert.equal(cache.size, 0);
});

Deno.test("FieldMaskCache keeps text and path forms apart", () => {
  const cache = new FieldMaskCache(TEST_POD_SCHEMA);
  cache.parseText("status.phase,status.podIP");
  // One path holding a comma is an unknown field, whatever the text form did.
  assert.throws(() => cache.parsePaths(["status.phase,status.podIP"]), FieldMaskError);
});

Deno.test("FieldMaskCache does not store invalid masks", () => {
  const cache = new FieldMaskCache(TEST_POD_SCHEMA);
  for (let i = 0; i < 3; i++) assert.throws(() => cache.parseText("status.bogus"), FieldMaskError);
  assert.equal(cache.size, 0);
});

Deno.test("FieldMaskCache stays bounded under hostile masks", async (t) => {
  await t.step("10 000 distinct valid masks", () => {
    const cache = new FieldMaskCache(TEST_POD_SCHEMA);
    for (let i = 0; i < 10_000; i++) {
      cache.parseText(
        `status.phase${",status.phase".repeat(i % 50)}${" ".repeat(Math.floor(i / 50))}`,
      );
    }
    assert.equal(cache.size, 256);
  });
  await t.step("masks longer than maxKeyLength are compiled, not stored", () => {
    const cache = new FieldMaskCache(TEST_POD_SCHEMA, { maxKeyLength: 100 });
    const text = "status.phase,".repeat(100) + "status.podIP";
    const a = cache.parseText(text);
    assert.equal(cache.size, 0);
    assert.notEqual(cache.parseText(text), a);
    assert.equal(cache.parseText(text).key, a.key);
  });
  await t.step("maxEntries 0 stores nothing", () => {
    const cache = new FieldMaskCache(TEST_POD_SCHEMA, { maxEntries: 0 });
    cache.parseText("status.phase");
    assert.equal(cache.size, 0);
  });
});

Deno.test("FieldMaskCache rejects invalid bounds", async (t) => {
  const cases = [
    { maxEntries: -1 },
    { maxEntries: 1.5 },
    { maxEntries: Number.NaN },
    { maxEntries: Infinity },
    { maxKeyLength: -1 },
    { maxKeyLength: Infinity },
  ];
  for (const options of cases) {
    await t.step(JSON.stringify(options, (_, v) => typeof v === "number" ? String(v) : v), () => {
      assert.throws(() => new FieldMaskCache(TEST_POD_SCHEMA, options), RangeError);
    });
  }
});
