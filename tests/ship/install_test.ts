// `deno task install` puts a `pods-api` command on the PATH from a checkout;
// its client commands print their output and nothing else (no `Task ...`
// line, no download progress), from any directory.
import assert from "node:assert/strict";
import { dirname } from "node:path";
import { commandScript, INSTALL_DIR_ENV, PACKAGED_PATHS } from "../../scripts/install.ts";
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
    assert.deepEqual(await Array.fromAsync(Deno.readDir(`${dir}/env`), (e) => e.name), [
      "pods-api",
    ]);
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

/**
 * Runs scripts/install.ts as the task does, but allowed to write only under
 * `dir`: a regression can then not touch the machine's /usr/local/bin.
 */
function installInto(dir: string, args: string[], env: Record<string, string> = {}) {
  return run(Deno.execPath(), [
    "run",
    "--quiet",
    "--frozen",
    `--config=${ROOT}deno.json`,
    "--allow-read",
    `--allow-write=${dir}`,
    "--allow-env",
    "--allow-sys",
    `${ROOT}scripts/install.ts`,
    ...args,
  ], { HOME: dir, PATH: "/usr/bin:/bin", ...env });
}

Deno.test("deno task install writes ~/.local/bin/pods-api by default, for root too", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pods-api-install-" });
  try {
    const r = await installInto(dir, []);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^installed ${dir}/\\.local/bin/pods-api:`));
    assert.ok((await Deno.stat(`${dir}/.local/bin/pods-api`)).isFile);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno task install --prefix P writes P/bin/pods-api", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pods-api-install-" });
  try {
    const r = await installInto(dir, ["--prefix", `${dir}/opt/`]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^installed ${dir}/opt/bin/pods-api:`));
    const both = await installInto(dir, ["--prefix", dir, "--dir", dir]);
    assert.deepEqual([both.code, both.stderr], [2, "install: give --dir or --prefix, not both\n"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno task install never writes the path of the compiled binary the unit runs", async () => {
  const unit = await Deno.readTextFile(new URL("../../deploy/pods-api.service", import.meta.url));
  const execStart = /^ExecStart=(\S+)/m.exec(unit)![1]!;
  assert.ok(PACKAGED_PATHS.includes(execStart), `${execStart} is a packaged path`);
  const ops = await Deno.readTextFile(new URL("../../docs/OPERATIONS.md", import.meta.url));
  for (const m of ops.matchAll(/^install -m 0755 -o root -g root dist\/pods-api (\S+)$/gm)) {
    assert.ok(PACKAGED_PATHS.includes(m[1]!), `${m[1]} is a packaged path`);
  }
  const dir = await Deno.makeTempDir({ prefix: "pods-api-install-" });
  try {
    // Named directly, through --prefix, and through a symlink to its directory.
    await Deno.symlink(dirname(execStart), `${dir}/link`);
    const ways = [["--dir", dirname(execStart)], ["--prefix", dirname(dirname(execStart))], [
      "--dir",
      `${dir}/link`,
    ]];
    for (const args of ways) {
      const r = await installInto(dir, args);
      const target = `${args[1]!.replace(/\/$/, "")}${args[0] === "--prefix" ? "/bin" : ""}`;
      assert.equal(r.code, 1, JSON.stringify(args));
      assert.equal(r.stdout, "");
      assert.match(
        r.stderr,
        new RegExp(
          `^install: will not write ${target}/pods-api: the compiled pods-api lives there`,
        ),
      );
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno task install replaces its own command and nothing else", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pods-api-install-" });
  try {
    const target = `${dir}/bin/pods-api`;
    const first = await installInto(dir, ["--dir", `${dir}/bin`]);
    assert.equal(first.code, 0, first.stderr);
    await Deno.writeTextFile(target, (await Deno.readTextFile(target)).replace("main=", "main2="));
    const again = await installInto(dir, ["--dir", `${dir}/bin`]);
    assert.equal(again.code, 0, again.stderr);
    assert.doesNotMatch(await Deno.readTextFile(target), /main2=/);
    // An ELF binary (the compiled form) and a symlink: left as they are.
    const elf = new Uint8Array([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]);
    await Deno.writeFile(target, elf, { mode: 0o755 });
    await Deno.writeTextFile(`${dir}/other`, "#!/bin/sh\nexit 0\n");
    await Deno.mkdir(`${dir}/bin/link`);
    await Deno.symlink(`${dir}/other`, `${dir}/bin/link/pods-api`);
    for (const bin of [`${dir}/bin`, `${dir}/bin/link`]) {
      const r = await installInto(dir, ["--dir", bin]);
      assert.equal(r.code, 1, bin);
      assert.match(
        r.stderr,
        new RegExp(
          `^install: will not write ${bin}/pods-api: a file that deno task install did not write is there`,
        ),
      );
    }
    assert.deepEqual(await Deno.readFile(target), elf);
    assert.equal(await Deno.readTextFile(`${dir}/other`), "#!/bin/sh\nexit 0\n");
    assert.equal(await Deno.readLink(`${dir}/bin/link/pods-api`), `${dir}/other`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
