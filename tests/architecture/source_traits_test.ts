/**
 * Every rule about a kind of source is a trait in `SOURCE_TRAITS`
 * (`src/model/pod_source_kind.ts`): no code outside the sources themselves
 * compares against a kind by name, so a new source is a folder and a row.
 */

import assert from "node:assert/strict";
import { SOURCE_TRAITS, SPEC_ORDER } from "../../src/model/pod_source_kind.ts";

const SRC = new URL("../../src/", import.meta.url);

async function* files(dir: URL): AsyncGenerator<URL> {
  for await (const entry of Deno.readDir(dir)) {
    const url = new URL(entry.name + (entry.isDirectory ? "/" : ""), dir);
    if (entry.isDirectory && entry.name !== "sources" && entry.name !== "generated") {
      yield* files(url);
    } else if (entry.isFile && entry.name.endsWith(".ts")) yield url;
  }
}

Deno.test("no code outside src/sources names a source kind in a comparison", async () => {
  const kinds = Object.keys(SOURCE_TRAITS).map((k) => k.replace("-", "\\-")).join("|");
  const rule = new RegExp(
    `(===|!==|case|includes\\()\\s*"(${kinds})"|"(${kinds})"\\s*(===|!==)`,
  );
  const found: string[] = [];
  for await (const file of files(SRC)) {
    const lines = (await Deno.readTextFile(file)).split("\n");
    lines.forEach((line, i) => {
      // Doc comments show usage; code is what decides.
      if (/^\s*(\*|\/\/)/.test(line)) return;
      if (rule.test(line)) {
        found.push(`${file.pathname.split("/src/")[1]}:${i + 1}: ${line.trim()}`);
      }
    });
  }
  assert.deepEqual(found, []);
});

Deno.test("SOURCE_TRAITS: one runtime, distinct ranks, and the spec order follows them", () => {
  const traits = Object.values(SOURCE_TRAITS);
  assert.equal(traits.filter((t) => t.status === "runtime").length, 1);
  assert.equal(new Set(traits.map((t) => t.specRank)).size, traits.length);
  const lenders = traits.flatMap((t) => t.lendsUidRank === undefined ? [] : [t.lendsUidRank]);
  assert.equal(new Set(lenders).size, lenders.length);
  assert.deepEqual(SPEC_ORDER, [
    "kubelet-podsapi",
    "apiserver",
    "kubelet",
    "static",
    "fake",
    "cri",
  ]);
});
