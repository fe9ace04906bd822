/**
 * The build scripts: permission flags, version stamping, and `compile.ts`
 * end to end (its one-line failures, and a real `deno compile` of the bundle
 * with this Deno standing in for denort).
 *
 * @module
 */

import { v8FlagsArg } from "../../scripts/_v8_flags.ts";
import assert from "node:assert/strict";
import { dirname } from "node:path";
import {
  CRI_SOCKETS,
  daemonPermissionFlags,
  DEFAULT_SOCKET_DIR,
  KUBELET_PODS_API_DIR,
  PODRESOURCES_SOCKET,
  READ_PATHS,
} from "../../scripts/_permissions.ts";
import {
  compileArgs,
  DENORT_UNREACHABLE,
  explainCompileFailure,
  parseCompileFlags,
} from "../../scripts/compile.ts";
import { describeVersion, ROOT_DIR, stampBundle } from "../../scripts/stamp_version.ts";
import { SERVE_FLAGS } from "../../src/config_flags.ts";
import { DEFAULT_RUNTIME_ENDPOINTS } from "../../src/sources/cri/mod.ts";
import { DEFAULT_TOKEN_FILE } from "../../src/sources/kubelet/mod.ts";

const DECODER = new TextDecoder();

function flagValues(flags: string[], name: string): string[] {
  const flag = flags.find((f) => f === name || f.startsWith(`${name}=`));
  assert.ok(flag, `${name} is set`);
  return flag === name ? [] : flag.slice(name.length + 1).split(",");
}

function covers(scopes: string[], path: string): boolean {
  return scopes.some((scope) => path === scope || path.startsWith(`${scope}/`));
}

Deno.test("daemonPermissionFlags() scopes everything but the network and never allows all", () => {
  const flags = daemonPermissionFlags();
  assert.ok(!flags.some((f) => f === "-A" || f === "--allow-all" || f.startsWith("--allow-run")));
  assert.ok(!flags.some((f) => f.startsWith("--allow-ffi")));
  assert.ok(flags.includes("--no-prompt") && flags.includes("--deny-import"));
  for (const name of ["--allow-read", "--allow-write", "--allow-env", "--allow-sys"]) {
    assert.ok(flagValues(flags, name).length > 0, `${name} is scoped`);
  }
  assert.deepEqual(flagValues(flags, "--allow-sys"), ["hostname", "uid", "networkInterfaces"]);
  // `/` last, for the client commands; `serve` gives it back (src/daemon_permissions.ts).
  assert.deepEqual(flagValues(flags, "--allow-write"), [
    DEFAULT_SOCKET_DIR,
    KUBELET_PODS_API_DIR,
    ...CRI_SOCKETS,
    PODRESOURCES_SOCKET,
    "/",
  ]);
});

Deno.test("daemonPermissionFlags() covers every default path of the daemon", () => {
  const flags = daemonPermissionFlags();
  const read = flagValues(flags, "--allow-read");
  const write = flagValues(flags, "--allow-write");
  const socket = String(SERVE_FLAGS.socket.default);
  assert.equal(dirname(socket), DEFAULT_SOCKET_DIR);
  assert.ok(covers(read, socket) && covers(write, socket));
  // The kubelet's Pods API socket (read) and the compatibility socket (bound) there.
  for (const flag of ["kubelet-pods-api-endpoint", "kubelet-compat-socket"] as const) {
    const path = String(SERVE_FLAGS[flag].default);
    assert.ok(covers(read, path) && covers(write, path), `--${flag} "${path}" is allowed`);
  }
  assert.ok(covers(read, "/etc/group"));
  for (const endpoint of DEFAULT_RUNTIME_ENDPOINTS) {
    const path = new URL(endpoint).pathname;
    // Connecting to a UNIX socket needs read and write on its path.
    assert.ok(covers(read, path) && covers(write, path), `runtime socket "${path}" is allowed`);
  }
  assert.ok(covers(read, DEFAULT_TOKEN_FILE));
  // The podresources API is on when its socket exists: connecting needs read and write.
  assert.ok(covers(read, PODRESOURCES_SOCKET) && covers(write, PODRESOURCES_SOCKET));
  assert.ok(READ_PATHS.every((p) => p.startsWith("/")));
});

Deno.test("daemonPermissionFlags() moves the socket directory when asked", async (t) => {
  const cases = [
    { name: "absolute", dir: "/tmp/x/", ok: true },
    { name: "relative", dir: "run/pods-api", ok: false },
    { name: "comma", dir: "/tmp/a,b", ok: false },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      if (!c.ok) {
        assert.throws(() => daemonPermissionFlags({ socketDir: c.dir }), TypeError);
        return;
      }
      const flags = daemonPermissionFlags({ socketDir: c.dir });
      assert.equal(flagValues(flags, "--allow-write")[0], "/tmp/x");
      assert.ok(!flagValues(flags, "--allow-read").includes(DEFAULT_SOCKET_DIR));
    });
  }
});

Deno.test("stampBundle() replaces the one BUILD_VERSION declaration", async (t) => {
  const cases = [
    {
      name: "plain",
      text: 'a();\nvar BUILD_VERSION = "0.1.0-dev";\nb();\n',
      out: 'a();\nvar BUILD_VERSION = "v1.2.3";\nb();\n',
    },
    {
      name: "renamed by the bundler",
      text: 'var BUILD_VERSION2 = "x";\n',
      out: 'var BUILD_VERSION2 = "v1.2.3";\n',
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => assert.equal(stampBundle(c.text, "v1.2.3"), c.out));
  }
});

Deno.test("stampBundle() refuses what it cannot stamp exactly once", async (t) => {
  const cases = [
    { name: "no declaration", text: "const v = 1;\n", version: "v1", error: SyntaxError },
    {
      name: "two declarations",
      text: 'var BUILD_VERSION = "a";\nvar BUILD_VERSION2 = "b";\n',
      version: "v1",
      error: SyntaxError,
    },
    {
      name: "quote in version",
      text: 'var BUILD_VERSION = "a";\n',
      version: 'v1"',
      error: TypeError,
    },
    { name: "empty version", text: 'var BUILD_VERSION = "a";\n', version: "", error: TypeError },
  ];
  for (const c of cases) {
    await t.step(c.name, () => assert.throws(() => stampBundle(c.text, c.version), c.error));
  }
});

async function git(cwd: string, ...args: string[]): Promise<string> {
  const { code, stdout, stderr } = await new Deno.Command("git", {
    args,
    cwd,
    env: {
      GIT_AUTHOR_NAME: "t",
      GIT_AUTHOR_EMAIL: "t@example.com",
      GIT_COMMITTER_NAME: "t",
      GIT_COMMITTER_EMAIL: "t@example.com",
      GIT_CONFIG_GLOBAL: "/dev/null",
      GIT_CONFIG_NOSYSTEM: "1",
    },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(code, 0, DECODER.decode(stderr));
  return DECODER.decode(stdout).trim();
}

Deno.test("describeVersion() is the package version, plus the commit unless built from its tag", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "pods-api-version-" });
  const cwd = new URL(`file://${dir}/`);
  try {
    await Deno.writeTextFile(`${dir}/deno.json`, JSON.stringify({ version: "1.2.3" }));
    await t.step(
      "no repository",
      async () => assert.equal(await describeVersion({ cwd }), "1.2.3"),
    );
    await t.step("no git", async () => {
      assert.equal(await describeVersion({ cwd, git: `${dir}/no-such-git` }), "1.2.3");
    });
    await git(dir, "init", "-q");
    await git(dir, "add", "deno.json");
    await git(dir, "commit", "-q", "-m", "one");
    const hash = await git(dir, "rev-parse", "--short", "HEAD");
    await t.step("commit without a tag", async () => {
      assert.equal(await describeVersion({ cwd }), `1.2.3+${hash}`);
    });
    await git(dir, "tag", "v1.2.2");
    await t.step("another version's tag is not this version", async () => {
      assert.equal(await describeVersion({ cwd }), `1.2.3+${hash}`);
    });
    await Deno.writeTextFile(`${dir}/deno.json`, JSON.stringify({ version: "1.2.3", x: 1 }));
    await t.step("dirty commit without a tag", async () => {
      assert.equal(await describeVersion({ cwd }), `1.2.3+${hash}.dirty`);
    });
    await git(dir, "tag", "v1.2.3");
    await t.step("dirty tag", async () => {
      assert.equal(await describeVersion({ cwd }), `1.2.3+${hash}.dirty`);
    });
    await git(dir, "commit", "-q", "-am", "two");
    const two = await git(dir, "rev-parse", "--short", "HEAD");
    await t.step("commit after the tag", async () => {
      assert.equal(await describeVersion({ cwd }), `1.2.3+${two}`);
    });
    await git(dir, "tag", "-f", "v1.2.3");
    await t.step("the clean tagged commit", async () => {
      assert.equal(await describeVersion({ cwd }), "1.2.3");
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("parseCompileFlags() reads --output, --target and --socket-dir", async (t) => {
  const cases = [
    {
      name: "defaults",
      args: [],
      want: { output: "dist/pods-api", target: undefined, socketDir: DEFAULT_SOCKET_DIR },
    },
    {
      name: "both spellings",
      args: ["--output=/tmp/p", "--target", "aarch64-unknown-linux-gnu", "--socket-dir=/run/p"],
      want: { output: "/tmp/p", target: "aarch64-unknown-linux-gnu", socketDir: "/run/p" },
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => assert.deepEqual(parseCompileFlags(c.args), c.want));
  }
  await t.step(
    "unknown flag",
    () => assert.throws(() => parseCompileFlags(["--allow-all"]), TypeError),
  );
  await t.step(
    "missing value",
    () => assert.throws(() => parseCompileFlags(["--output"]), TypeError),
  );
});

Deno.test("compileArgs() compiles the bundle frozen with the daemon's permissions", () => {
  const args = compileArgs(parseCompileFlags([]), "dist/pods-api.js");
  assert.deepEqual(args.slice(0, 3), ["compile", "--frozen", v8FlagsArg()]);
  assert.deepEqual(args.slice(3, -3), daemonPermissionFlags());
  assert.deepEqual(args.slice(-3), ["--output", "dist/pods-api", "dist/pods-api.js"]);
});

Deno.test("explainCompileFailure() turns runtime download failures into one line", async (t) => {
  const unreachable = [
    "\x1b[0m\x1b[32mCompile\x1b[0m dist/pods-api.js to dist/pods-api",
    "\x1b[0m\x1b[32mDownload\x1b[0m https://dl.deno.land/release/v2.9.6/denort-x86_64-unknown-linux-gnu.zip",
    "\x1b[1m\x1b[31merror\x1b[0m: Writing deno compile executable to temporary file 'dist/pods-api.tmp-1'",
    "",
    "Caused by:",
    "    0: Setting up base binary.",
    "    1: error sending request for url (https://dl.deno.land/release/v2.9.6/denort-x86_64-unknown-linux-gnu.zip): client error (Connect): dns error: failed to lookup address information: Name or service not known",
    "",
    "Stack backtrace:",
    "   0: <unknown>",
  ].join("\n");
  await t.step("download server unreachable", () => {
    assert.equal(explainCompileFailure(unreachable), DENORT_UNREACHABLE);
  });
  await t.step("DENORT_BIN missing", () => {
    const text =
      "error: Writing\n\nCaused by:\n    0: Could not find denort at '/opt/denort'\n    1: No such file";
    assert.equal(
      explainCompileFailure(text),
      'DENORT_BIN is set to "/opt/denort", which does not exist; point it at a denort binary',
    );
  });
  await t.step("other errors keep Deno's message without the backtrace", () => {
    const text =
      "\x1b[0m\x1b[32mCompile\x1b[0m x\nerror: Lockfile is out of date\n\nStack backtrace:\n   0: <unknown>\n";
    assert.equal(explainCompileFailure(text), "error: Lockfile is out of date");
  });
});

function includesBytes(haystack: Uint8Array, needle: Uint8Array): boolean {
  for (let i = haystack.indexOf(needle[0]!); i !== -1; i = haystack.indexOf(needle[0]!, i + 1)) {
    if (i + needle.length > haystack.length) return false;
    let j = 1;
    while (j < needle.length && haystack[i + j] === needle[j]) j++;
    if (j === needle.length) return true;
  }
  return false;
}

async function runCompile(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-run",
      "--allow-read",
      "--allow-write",
      "--allow-env=DENORT_BIN",
      "scripts/compile.ts",
      ...args,
    ],
    cwd: ROOT_DIR,
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code, stdout: DECODER.decode(stdout), stderr: DECODER.decode(stderr) };
}

Deno.test("compile.ts says in one line that DENORT_BIN does not exist", async () => {
  const { code, stderr } = await runCompile(["--output", "/nonexistent/pods-api"], {
    DENORT_BIN: "/nonexistent/denort",
  });
  assert.equal(code, 1);
  assert.equal(
    stderr,
    'compile: DENORT_BIN is set to "/nonexistent/denort", which does not exist; point it at a denort binary\n',
  );
});

Deno.test("compile.ts builds, or says in one line that denort is unreachable", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pods-api-compile-" });
  try {
    const { code, stderr } = await runCompile(["--output", `${dir}/pods-api`], {});
    if (code === 0) {
      // A machine that can reach dl.deno.land (or has denort cached): a real binary.
      const run = await new Deno.Command(`${dir}/pods-api`, { args: ["version"], stdout: "piped" })
        .output();
      assert.match(DECODER.decode(run.stdout), /^pods-api \S+\n$/);
    } else {
      assert.equal(code, 1);
      assert.equal(stderr, `compile: ${DENORT_UNREACHABLE}\n`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** A target other than this machine's: its binary is not run by compile.ts. */
const OTHER_TARGET = Deno.build.arch === "x86_64"
  ? "aarch64-unknown-linux-gnu"
  : "x86_64-unknown-linux-gnu";

Deno.test("compile.ts removes a binary that does not run, and says why in one line", async () => {
  // This Deno stands in for denort: the result does not run as pods-api (a
  // full deno ignores the embedded program and refuses "version").
  const dir = await Deno.makeTempDir({ prefix: "pods-api-compile-" });
  try {
    const { code, stderr } = await runCompile(["--output", `${dir}/pods-api`], {
      DENORT_BIN: Deno.execPath(),
    });
    assert.equal(code, 1, stderr);
    assert.match(
      stderr,
      new RegExp(
        `^compile: "${dir}/pods-api version" exited 1 and printed "error: unrecognized subcommand 'version'", not "pods-api \\S+": DENORT_BIN must be the denort \\(not deno\\) of Deno ${Deno.version.deno} for this target; the binary was removed\n$`,
      ),
    );
    assert.deepEqual(await Array.fromAsync(Deno.readDir(dir), (e) => e.name), ["pods-api.js"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("compile.ts embeds the stamped bundle and the scoped permissions", async () => {
  // This Deno stands in for denort, for another target so that the result is
  // not run: `deno compile` itself runs with the real flags, and the payload
  // can be inspected.
  const dir = await Deno.makeTempDir({ prefix: "pods-api-compile-" });
  try {
    const { code, stderr } = await runCompile(
      ["--output", `${dir}/pods-api`, "--target", OTHER_TARGET],
      { DENORT_BIN: Deno.execPath() },
    );
    assert.equal(code, 0, stderr);
    const wrote = new RegExp(
      `^compile: wrote ${dir}/pods-api \\(pods-api (\\S+), [0-9.]+ MiB; built for ${OTHER_TARGET}, not run here\\)\n$`,
    ).exec(stderr);
    assert.ok(wrote, stderr);
    const binary = await Deno.readFile(`${dir}/pods-api`);
    const encoder = new TextEncoder();
    assert.ok(
      // Minified: the declaration's name is gone, the stamped value stays.
      includesBytes(binary, encoder.encode(`=${JSON.stringify(wrote[1])}`)),
      "the stamped bundle is embedded",
    );
    for (
      const fragment of [
        `"allow_write":["${DEFAULT_SOCKET_DIR}",`,
        `"allow_sys":["hostname","uid","networkInterfaces"]`,
        `"prompt":false`,
      ]
    ) {
      assert.ok(
        includesBytes(binary, encoder.encode(fragment)),
        `the binary's permissions hold ${fragment}`,
      );
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
