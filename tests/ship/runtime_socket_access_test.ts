/**
 * A runtime socket the daemon may not open is a configuration error: the
 * bundled daemon (what the image and the compiled binary run, with their
 * permissions) exits 2 at once with a line naming the socket and what is
 * missing, instead of waiting `--runtime-wait-timeout` and exiting 3, which
 * systemd restarts forever. Both refusals are real: the system's (a root-owned
 * 0600 socket, the daemon run as an unprivileged user through setpriv) and
 * Deno's (a socket outside the daemon's `--allow-read`/`--allow-write`).
 * Each run uses the unit's `--runtime-wait-timeout=5m`; a daemon that starts
 * waiting instead fails the test at its first "waiting" line.
 *
 * @module
 */

import assert from "node:assert/strict";
import { EXIT } from "../../main.ts";
import { bundleCommand } from "../../scripts/_permissions.ts";
import { buildBundle } from "../../scripts/bundle.ts";

const DECODER = new TextDecoder();
const USER = "pods-api-test-user";
const IS_ROOT = Deno.uid() === 0;

async function run(cmd: string, args: string[]): Promise<{ code: number; out: string }> {
  const o = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  return { code: o.code, out: DECODER.decode(o.stdout) + DECODER.decode(o.stderr) };
}

/** The unprivileged user of tests/reliability/access_test.ts, made when missing. */
async function testUser(): Promise<{ uid: number; gid: number }> {
  if ((await run("id", [USER])).code !== 0) {
    const r = await run("useradd", [
      "--system",
      "--no-create-home",
      "--shell",
      "/usr/sbin/nologin",
      USER,
    ]);
    assert.equal(r.code, 0, r.out);
  }
  const uid = Number((await run("id", ["-u", USER])).out.trim());
  const gid = Number((await run("id", ["-g", USER])).out.trim());
  return { uid, gid };
}

interface Ended {
  code: number;
  lines: Record<string, unknown>[];
  raw: string;
}

/**
 * Runs `serve` until it exits, or until it logs that it waits for the
 * runtime (then it is stopped and the wait is reported as the failure).
 */
async function serveUntilExit(cmd: string, args: string[]): Promise<Ended> {
  const child = new Deno.Command(cmd, {
    args,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const lines: Record<string, unknown>[] = [];
  let raw = "";
  let buffer = "";
  for await (const chunk of child.stderr) {
    buffer += DECODER.decode(chunk, { stream: true });
    let nl;
    while ((nl = buffer.indexOf("\n")) !== -1) {
      const text = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      raw += text + "\n";
      try {
        lines.push(JSON.parse(text));
      } catch {
        // Not a log line.
      }
      if (text.includes("waiting for the container runtime")) {
        child.kill("SIGKILL");
        await child.status;
        assert.fail(`serve waits for a runtime socket it may not open:\n${raw}`);
      }
    }
  }
  const { code } = await child.status;
  return { code, lines, raw: raw + buffer };
}

function serveArgs(dir: string, runtimeSocket: string): string[] {
  return [
    "serve",
    `--socket=${dir}/api/pods-api.sock`,
    "--metrics-bind-address=127.0.0.1:0",
    "--runtime-wait-timeout=5m",
    `--container-runtime-endpoint=unix://${runtimeSocket}`,
    "--kubelet-pods-api-endpoint=none",
    "--kubelet-compat-socket=",
    "--hostname-override=access-node",
  ];
}

/** The one error line of an ended run, checked to be the configuration error. */
function refusal(ended: Ended, socket: string): string {
  assert.equal(ended.code, EXIT.usage, ended.raw);
  const errors = ended.lines.filter((l) => l.level === "error");
  assert.equal(errors.length, 1, ended.raw);
  assert.equal(errors[0]!.msg, "pods-api may not open the container runtime socket");
  assert.equal(errors[0]!.socket, socket);
  const message = String(errors[0]!.error);
  assert.ok(message.startsWith(`Cannot open the container runtime socket ${socket}: `), message);
  // Advice for a `deno run` command line nobody typed is no use to the binary or the image.
  assert.doesNotMatch(ended.raw, /run again with/);
  return message;
}

const bundleDir = await Deno.makeTempDir({ prefix: "pods-api-access-bundle-" });
globalThis.addEventListener("unload", () => Deno.removeSync(bundleDir, { recursive: true }));
let bundle: string | undefined;

async function builtBundle(): Promise<string> {
  if (bundle !== undefined) return bundle;
  const built = await buildBundle(`${bundleDir}/pods-api.js`);
  assert.equal(built.code, 0, built.log);
  bundle = `${bundleDir}/pods-api.js`;
  return bundle;
}

/** A listening UNIX socket at `path`, mode `mode`: there, answering connects. */
function listening(path: string, mode: number): Deno.UnixListener {
  const listener = Deno.listen({ transport: "unix", path });
  Deno.chmodSync(path, mode);
  return listener;
}

Deno.test({
  name: "serve as an unprivileged user exits 2 at once on a root-owned 0600 runtime socket",
  ignore: !IS_ROOT,
  async fn() {
    const ids = await testUser();
    const dir = await Deno.makeTempDir({ prefix: "pods-api-access-" });
    try {
      await Deno.chmod(dir, 0o755);
      // The user runs its own copy of Deno and the bundle: root's are under 0700 /root.
      await Deno.copyFile(Deno.execPath(), `${dir}/deno`);
      await Deno.chmod(`${dir}/deno`, 0o755);
      await Deno.copyFile(await builtBundle(), `${dir}/pods-api.js`);
      await Deno.chmod(`${dir}/pods-api.js`, 0o644);
      for (const sub of ["api", "deno-dir"]) {
        await Deno.mkdir(`${dir}/${sub}`);
        await Deno.chown(`${dir}/${sub}`, ids.uid, ids.gid);
      }
      await Deno.mkdir(`${dir}/run`, { mode: 0o755 });
      await Deno.chmod(`${dir}/run`, 0o755);
      const socket = `${dir}/run/containerd.sock`;
      using _runtime = listening(socket, 0o600);
      const command = bundleCommand(`${dir}/deno`, `${dir}/pods-api.js`, {
        socketDir: `${dir}/api`,
      });
      // The runtime socket is one the permissions allow: only the system refuses it.
      const flags = command.map((a) =>
        a.startsWith("--allow-read=") || a.startsWith("--allow-write=") ? `${a},${socket}` : a
      );
      const ended = await serveUntilExit("setpriv", [
        `--reuid=${ids.uid}`,
        `--regid=${ids.gid}`,
        "--clear-groups",
        "env",
        `DENO_DIR=${dir}/deno-dir`,
        `HOME=${dir}/deno-dir`,
        ...flags,
        ...serveArgs(dir, socket),
      ]);
      const message = refusal(ended, socket);
      assert.match(message, new RegExp(`permission denied by the system to uid ${ids.uid} `));
      assert.match(message, /\(owner uid 0, group gid 0, mode 0600\)/);
      assert.match(message, /Run pods-api as root/);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("serve exits 2 at once on a runtime socket its Deno permissions do not cover", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "pods-api-access-" });
  try {
    await Deno.mkdir(`${dir}/run`);
    const socket = `${dir}/run/cri.sock`;
    using _runtime = listening(socket, 0o660);
    const path = await builtBundle();
    const cases = [
      // The daemon's own permissions (the binary's, the image's, the unit's): the path is not there.
      { name: "neither read nor write", read: [] as string[], lacks: "read access" },
      // Read granted, write not: the permission named is the one that is missing.
      { name: "read only", read: [socket], lacks: "write access" },
    ];
    for (const c of cases) {
      await t.step(c.name, async () => {
        const [deno, ...flags] = bundleCommand(Deno.execPath(), path, { socketDir: `${dir}/api` })
          .map((a) =>
            a.startsWith("--allow-read=") && c.read.length > 0 ? `${a},${c.read.join(",")}` : a
          );
        const ended = await serveUntilExit(deno!, [...flags, ...serveArgs(dir, socket)]);
        const message = refusal(ended, socket);
        assert.match(message, new RegExp(`pods-api's permissions lack ${c.lacks} to it`));
        assert.match(message, /--container-runtime-endpoint/);
        assert.match(message, /scripts\/_permissions\.ts/);
      });
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
