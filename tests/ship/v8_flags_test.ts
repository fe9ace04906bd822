/**
 * The daemon's V8 sizing (scripts/_v8_flags.ts) is carried by every way it
 * starts, and the flags do what they claim.
 *
 * @module
 */

import assert from "node:assert/strict";
import { parse } from "yaml";
import { bundleCommand } from "../../scripts/_permissions.ts";
import { compileArgs } from "../../scripts/compile.ts";
import { imageEntrypoint } from "../../scripts/image.ts";
import { DAEMON_V8_FLAGS, v8FlagsArg, v8FlagsEnv } from "../../scripts/_v8_flags.ts";

const ROOT = new URL("../../", import.meta.url);
const read = (path: string) => Deno.readTextFileSync(new URL(path, ROOT));

Deno.test("the V8 flags are the semi-space and old-space sizes", () => {
  assert.deepEqual(DAEMON_V8_FLAGS.map((f) => f.split("=")[0]), [
    "--max-semi-space-size",
    "--max-old-space-size",
  ]);
  assert.equal(v8FlagsArg(), `--v8-flags=${v8FlagsEnv()}`);
});

Deno.test("deno task start and demo run with the daemon's V8 flags", () => {
  const tasks = (JSON.parse(read("deno.json")) as { tasks: Record<string, string> }).tasks;
  for (const name of ["start", "demo"]) {
    const argv = tasks[name]!.split(/\s+/);
    assert.ok(argv.includes(v8FlagsArg()), `task ${name}: ${tasks[name]}`);
    // A deno flag, before the script: after it, it would go to pods-api.
    assert.ok(argv.indexOf(v8FlagsArg()) < argv.indexOf("main.ts"), name);
  }
});

Deno.test("the bundle's run command, the image and the compiled binary carry the flags", () => {
  const bundle = bundleCommand("deno", "pods-api.js");
  assert.ok(bundle.indexOf(v8FlagsArg()) > 0 && bundle.indexOf(v8FlagsArg()) < bundle.length - 1);
  assert.ok(imageEntrypoint().includes(v8FlagsArg()));
  const compile = compileArgs(
    { output: "dist/pods-api", target: undefined, socketDir: "/s" },
    "dist/pods-api.js",
  );
  assert.ok(compile.indexOf(v8FlagsArg()) < compile.indexOf("dist/pods-api.js"));
});

Deno.test("the systemd unit and the DaemonSet set DENO_V8_FLAGS to the same flags", () => {
  const unit = read("deploy/pods-api.service");
  assert.deepEqual(
    [...unit.matchAll(/^Environment=DENO_V8_FLAGS=(.*)$/gm)].map((m) => m[1]),
    [v8FlagsEnv()],
  );
  const ds = parse(read("deploy/base/daemonset.yaml")) as {
    spec: { template: { spec: { containers: { env?: { name: string; value?: string }[] }[] } } };
  };
  const env = ds.spec.template.spec.containers[0]!.env ?? [];
  assert.deepEqual(env.filter((e) => e.name === "DENO_V8_FLAGS").map((e) => e.value), [
    v8FlagsEnv(),
  ]);
});

Deno.test("under the flags V8 keeps a small young generation and caps the heap", async () => {
  const probe = `
    import v8 from "node:v8";
    const keep = [];
    for (let i = 0; i < 300000; i++) keep.push({ i, s: "x" + i });
    const space = v8.getHeapSpaceStatistics().find((s) => s.space_name === "new_space");
    console.log(JSON.stringify({ newSpace: space.space_size, limit: v8.getHeapStatistics().heap_size_limit, n: keep.length }));
  `;
  const run = async (flags: string[]) => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["eval", ...flags, probe],
      stdout: "piped",
      stderr: "inherit",
    }).output();
    assert.ok(out.success);
    return JSON.parse(new TextDecoder().decode(out.stdout)) as { newSpace: number; limit: number };
  };
  const [sized, plain] = await Promise.all([run([v8FlagsArg()]), run([])]);
  const oldMb = Number(/--max-old-space-size=(\d+)/.exec(v8FlagsEnv())![1]);
  const semiMb = Number(/--max-semi-space-size=(\d+)/.exec(v8FlagsEnv())![1]);
  // Two semi-spaces plus V8's own pages, which vary by a page or two (seen: 3.25 to 4.25 semi-spaces);
  // one default semi-space alone is 16 MB.
  assert.ok(sized.newSpace <= 8 * semiMb * 1048576, `new space ${sized.newSpace}`);
  assert.ok(plain.newSpace > sized.newSpace, "the default young generation is larger");
  assert.ok(sized.limit >= oldMb * 1048576 && sized.limit <= (oldMb + 16) * 1048576);
});
