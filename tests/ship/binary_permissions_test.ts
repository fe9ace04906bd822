/**
 * The binary's permissions (scripts/_permissions.ts) as its two halves use
 * them: the client commands reach any socket path a user names and read
 * PODS_API_SOCKET; `serve` gives `/` back at once and keeps only its scoped
 * paths. Run from the source with exactly the flags the binary embeds.
 */
import assert from "node:assert/strict";
import { daemonPermissionFlags } from "../../scripts/_permissions.ts";
import { startSimDaemon } from "../client/_sim_daemon.ts";

const MAIN = new URL("../../main.ts", import.meta.url).pathname;

async function runWithBinaryFlags(
  socketDir: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--frozen", ...daemonPermissionFlags({ socketDir }), MAIN, ...args],
    env: { PATH: Deno.env.get("PATH") ?? "", HOME: Deno.env.get("HOME") ?? "/", ...env },
    clearEnv: true,
    stdin: "null",
  }).output();
  const decoder = new TextDecoder();
  return { code, stdout: decoder.decode(stdout), stderr: decoder.decode(stderr) };
}

Deno.test("the binary's client commands reach a socket outside the daemon's paths, named by flag or PODS_API_SOCKET", async () => {
  await using daemon = await startSimDaemon();
  const scoped = await Deno.makeTempDir({ prefix: "pods-api-scope-" });
  try {
    const byFlag = await runWithBinaryFlags(`${scoped}/sock`, [
      "list",
      "--socket",
      daemon.socket,
      "-o",
      "name",
      "-n",
      "logging",
    ]);
    assert.equal(byFlag.code, 0, byFlag.stderr);
    assert.equal(byFlag.stdout, "pod/fluent-bit-px9rd\n");
    const byEnv = await runWithBinaryFlags(`${scoped}/sock`, [
      "list",
      "-o",
      "name",
      "-n",
      "logging",
    ], {
      PODS_API_SOCKET: daemon.socket,
    });
    assert.equal(byEnv.code, 0, byEnv.stderr);
    assert.equal(byEnv.stdout, "pod/fluent-bit-px9rd\n");
  } finally {
    await Deno.remove(scoped, { recursive: true });
  }
});

Deno.test("the binary's serve gives back / and may not read a manifest path outside its scope", async () => {
  const scoped = await Deno.makeTempDir({ prefix: "pods-api-scope-" });
  const outside = await Deno.makeTempDir({ prefix: "pods-api-outside-" });
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--frozen",
      ...daemonPermissionFlags({ socketDir: `${scoped}/sock` }),
      MAIN,
      "serve",
      "--simulate",
      "--socket",
      `${scoped}/sock/pods-api.sock`,
      "--kubelet-compat-socket=",
      "--metrics-bind-address",
      "127.0.0.1:0",
      "--hostname-override",
      "vm",
      "--pod-manifest-path",
      outside,
    ],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let log = "";
  // A bound on a hang (the daemon never logging the refusal), not a timing assertion.
  const guard = setTimeout(() => child.kill("SIGKILL"), 60_000);
  try {
    while (!/relist failed/.test(log)) {
      const { value, done } = await reader.read();
      if (done) break;
      log += value;
    }
    assert.match(
      log,
      new RegExp(`Cannot read static pod manifest path \\\\"${outside}\\\\": Requires read access`),
    );
  } finally {
    child.kill("SIGTERM");
    while (!(await reader.read()).done) {
      // Drain until the daemon exits.
    }
    await child.status;
    clearTimeout(guard);
    await Deno.remove(scoped, { recursive: true });
    await Deno.remove(outside, { recursive: true });
  }
});
