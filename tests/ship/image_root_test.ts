/**
 * scripts/_image_root.ts and `analyseBundleForImage()`, with the real Deno:
 * the image build's run of the entrypoint in the image's own root leaves
 * Deno's analysis of the bundle at the bundle's path in the image, settled
 * (no logs left behind, nothing more to write), so that a first start of the
 * image finds it. A start that does not find it writes a new analysis: the
 * control below shows that the "nothing written" assertion can fail.
 *
 * @module
 */

import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { runInRoot } from "../../scripts/_image_root.ts";
import {
  analyseBundleForImage,
  hostArchitecture,
  IMAGE_PATHS,
  imageEntrypoint,
  imageEnvRecord,
  platformInput,
} from "../../scripts/image.ts";

/** A small bundle with one import, standing in for dist/pods-api.js. */
const BUNDLE = 'import { format } from "node:util";\nconsole.log(format("%s", "stand-in"));\n';

/** Bytes Deno wrote to a database's write-ahead log since it was checkpointed. */
async function walBytes(denoDir: string, name: string): Promise<number> {
  try {
    return (await Deno.stat(`${denoDir}/${name}-wal`)).size;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return 0;
    throw e;
  }
}

Deno.test("the image build leaves Deno's analysis of the bundle at its path in the image", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "pods-api-image-root-" });
  try {
    const bundle = `${dir}/pods-api.js`;
    await Deno.writeTextFile(bundle, BUNDLE);
    const root = `${dir}/root`;
    const made = await analyseBundleForImage(
      await platformInput(Deno.execPath(), hostArchitecture()),
      bundle,
      root,
    );
    assert.ok("denoDir" in made, "error" in made ? made.error : "");
    const { denoDir } = made;
    assert.equal(denoDir, `${root}${IMAGE_PATHS.denoDir}`);

    await t.step("one analysis, of the bundle at its path in the image; no logs left", async () => {
      const names: string[] = [];
      for await (const e of Deno.readDir(denoDir)) names.push(e.name);
      assert.ok(names.includes("dep_analysis_cache_v2"), names.join(", "));
      assert.deepEqual(names.filter((n) => /-(wal|shm)$/.test(n)), []);
      const db = new DatabaseSync(`${denoDir}/dep_analysis_cache_v2`, { readOnly: true });
      try {
        const rows = db.prepare("SELECT specifier, module_info FROM moduleinfocache").all();
        assert.equal(rows.length, 1);
        assert.equal(rows[0]!.specifier, `file://${IMAGE_PATHS.bundle}`);
        assert.match(String(rows[0]!.module_info), /node:util/);
      } finally {
        db.close();
      }
    });

    const entrypoint = [...imageEntrypoint(), "version"];
    await t.step("a start of the image finds it and writes nothing", async () => {
      const run = await runInRoot(root, entrypoint, imageEnvRecord());
      assert.equal(run.code, 0, run.output);
      assert.match(run.output, /stand-in/);
      assert.equal(await walBytes(denoDir, "dep_analysis_cache_v2"), 0);
    });

    await t.step("control: a bundle it has not analysed is analysed again", async () => {
      await Deno.writeTextFile(`${root}${IMAGE_PATHS.bundle}`, BUNDLE.replace("stand-in", "new"));
      const run = await runInRoot(root, entrypoint, imageEnvRecord());
      assert.equal(run.code, 0, run.output);
      assert.ok(await walBytes(denoDir, "dep_analysis_cache_v2") > 0);
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("runInRoot() says when the program cannot run", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pods-api-image-root-" });
  try {
    await Deno.mkdir(`${dir}/proc`);
    const run = await runInRoot(dir, ["/usr/local/bin/deno", "--version"], {});
    assert.notEqual(run.code, 0);
    assert.match(run.output, /deno/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
