// One version string everywhere: deno.json's version is what `pods-api
// version` prints from source, the image's tag, and every version the docs
// and manifests name for pods-api; builds only add the commit after `+`.
import assert from "node:assert/strict";
import { BUILD_VERSION } from "../../src/version.ts";
import { DEFAULT_IMAGE_NAME } from "../../scripts/image.ts";

const ROOT = new URL("../../", import.meta.url);
const VERSION: string = JSON.parse(await Deno.readTextFile(new URL("deno.json", ROOT))).version;

async function filesUnder(dir: string, ext: RegExp): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(new URL(dir, ROOT))) {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory) out.push(...await filesUnder(path, ext));
    else if (ext.test(e.name)) out.push(path);
  }
  return out;
}

Deno.test("src/version.ts and the image tag are deno.json's version", () => {
  assert.match(VERSION, /^\d+\.\d+\.\d+$/);
  assert.equal(BUILD_VERSION, VERSION);
  assert.equal(DEFAULT_IMAGE_NAME, `localhost/pods-api:${VERSION}`);
});

Deno.test("the docs and manifests name no other pods-api version", async () => {
  const files = [
    "README.md",
    ...await filesUnder("docs", /\.md$/),
    ...await filesUnder("deploy", /\.(ya?ml|service)$/),
  ];
  const seen: string[] = [];
  for (const file of files) {
    const text = await Deno.readTextFile(new URL(file, ROOT));
    // An image tag, or what `pods-api version` prints.
    for (const m of text.matchAll(/pods-api[: ]v?(\d+\.\d+\.\d+[^\s`'"),]*)/g)) {
      seen.push(m[1]!);
      const bare = m[1]!.replace(/\+.*$/, "");
      assert.equal(bare, VERSION, `${file}: ${m[0]}`);
      assert.doesNotMatch(m[1]!, /-dev/, `${file}: ${m[0]}`);
    }
  }
  assert.ok(seen.length >= 3, "the docs name the version: " + seen.join(", "));
});
