// `deno task install` puts a `pods-api` command on the PATH from a checkout;
// its client commands print their output and nothing else (no `Task ...`
// line, no download progress), from any directory.
import assert from "node:assert/strict";
import { commandScript, INSTALL_DIR_ENV } from "../../scripts/install.ts";
import { RUN_FLAGS, startSimDaemon } from "../client/_sim_daemon.ts";
import { BUILD_VERSION } from "../../src/version.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const DECODER = new TextDecoder();

async function run(cmd: string, args: string[], env: Record<string, string> = {}) {
  const r = await new Deno.Command(cmd, { args, cwd: "/", env, stdout: "piped", stderr: "piped" })
    .output();
  return { code: r.code, stdout: DECODER.decode(r.stdout), stderr: DECODER.decode(r.stderr) };
}

Deno.test("deno task install writes a pods-api command whose client commands print only their output", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pods-api-install-" });
  await using sim = await startSimDaemon();
  try {
    const installed = await run(Deno.execPath(), [
      "task",
      "--quiet",
      "--cwd",
      ROOT,
      "install",
      "--dir",
      `${dir}/bin`,
    ]);
    assert.equal(installed.code, 0, installed.stderr);
    assert.match(installed.stdout, new RegExp(`installed ${dir}/bin/pods-api`));
    assert.match(installed.stdout, /is not on your PATH/);
    const mode = (await Deno.stat(`${dir}/bin/pods-api`)).mode! & 0o777;
    assert.equal(mode, 0o755);
    // On the PATH, from another directory.
    const env = { PATH: `${dir}/bin:/usr/bin:/bin`, HOME: dir };
    const version = await run("pods-api", ["version"], env);
    assert.deepEqual(version, { code: 0, stdout: `pods-api ${BUILD_VERSION}\n`, stderr: "" });
    const list = await run("pods-api", ["list", "--socket", sim.socket, "-o", "name"], env);
    assert.equal(list.code, 0, list.stderr);
    assert.equal(list.stderr, "");
    assert.match(list.stdout, /^pod\/\S+\n/);
    const missing = await run("pods-api", ["list", "--socket", `${dir}/none.sock`], env);
    assert.equal(missing.code, 1);
    assert.equal(missing.stdout, "");
    assert.equal(missing.stderr.trim().split("\n").length, 1, "one line: " + missing.stderr);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno task install without --dir writes into $PODS_API_INSTALL_DIR, and --dir wins over it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pods-api-install-" });
  try {
    const task = (...args: string[]) =>
      run(Deno.execPath(), ["task", "--quiet", "--cwd", ROOT, "install", ...args], {
        [INSTALL_DIR_ENV]: `${dir}/env`,
      });
    const byEnv = await task();
    assert.equal(byEnv.code, 0, byEnv.stderr);
    assert.match(byEnv.stdout, new RegExp(`^installed ${dir}/env/pods-api:`));
    assert.ok((await Deno.stat(`${dir}/env/pods-api`)).isFile);
    const byFlag = await task("--dir", `${dir}/flag`);
    assert.equal(byFlag.code, 0, byFlag.stderr);
    assert.match(byFlag.stdout, new RegExp(`^installed ${dir}/flag/pods-api:`));
    assert.deepEqual(
      (await Array.fromAsync(Deno.readDir(`${dir}/env`))).map((e) => e.name),
      ["pods-api"],
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the command falls back to npx when the Deno of the install is gone", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pods-api-install-" });
  try {
    await Deno.writeTextFile(
      `${dir}/pods-api`,
      commandScript(`${dir}/no-such-deno`, `${ROOT}main.ts`),
      { mode: 0o755 },
    );
    const r = await run(`${dir}/pods-api`, ["version"], {
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      HOME: Deno.env.get("HOME") ?? dir,
    });
    assert.deepEqual(r, { code: 0, stdout: `pods-api ${BUILD_VERSION}\n`, stderr: "" });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the command runs main.ts with the permissions of deno task client", () => {
  const script = commandScript("/d/deno", "/src/main.ts");
  for (const flag of RUN_FLAGS.slice(1)) assert.ok(script.includes(` ${flag} `), flag);
  assert.match(script, /--quiet/);
});
