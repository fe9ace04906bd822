/**
 * Stopping the launcher stops the daemon: `npx -y deno@2.9.3 task demo` (and
 * `task start`) run as the README says, through the whole real chain (npm
 * exec, its script shell, `deno task`, `deno run main.ts serve`), and
 * SIGTERM goes where an operator sends it: to npx's pid (`kill PID`).
 * Afterwards no process of the chain is left and the daemon removed its
 * socket, i.e. it stopped cleanly rather than being killed. Without the
 * repository's .npmrc npm's `sh -c` (dash) took the signal and died, leaving
 * `deno task` and the daemon running.
 *
 * Each run is its own session (setsid), so npx leads its process group as
 * it does when started from an interactive shell; each binds a socket of its
 * own and metrics on a free port, so the test never meets the demo's fixed
 * paths. SIGINT is left out: a shell that starts a test run in the
 * background hands it down ignored (and Ctrl-C reaches the whole job anyway).
 *
 * @module
 */

import assert from "node:assert/strict";
import { exists, PEERS, requirePeer } from "../_support/peers.ts";
import { poll } from "../_support/poll.ts";
import { removeTree } from "../_support/remove_tree.ts";

const ROOT = new URL("../../", import.meta.url);
const DECODER = new TextDecoder();
const peer = requirePeer(PEERS.npm);

/**
 * The pids of live processes whose command line holds `marker`, as `ps`
 * lists them (Deno reads /proc only under --allow-all, which the suite does
 * not grant). A zombie holds nothing any more: it is left out.
 */
async function processesNaming(marker: string): Promise<number[]> {
  const out = await new Deno.Command("ps", {
    args: ["-e", "-ww", "-o", "pid=,stat=,args="],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  if (!out.success) throw new Error(`ps exited with ${out.code}`);
  const pids: number[] = [];
  for (const line of DECODER.decode(out.stdout).split("\n")) {
    const [, pid, stat, args] = /^\s*(\d+)\s+(\S+)\s(.*)$/.exec(line) ?? [];
    if (pid === undefined || stat === undefined || args === undefined) continue;
    if (!stat.startsWith("Z") && args.includes(marker)) pids.push(Number(pid));
  }
  return pids;
}

async function stopsWithLauncher(
  task: string,
  extra: string[],
  signal: Deno.Signal,
): Promise<void> {
  peer.check();
  const dir = await Deno.makeTempDir({ prefix: "pods-api-launcher-" });
  const socket = `${dir}/pods-api.sock`;
  const child = new Deno.Command("setsid", {
    args: [
      "npx",
      "-y",
      "deno@2.9.3",
      "task",
      task,
      ...extra,
      "--socket",
      socket,
      "--metrics-bind-address=127.0.0.1:0",
      "--kubelet-compat-socket=",
    ],
    cwd: ROOT,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let output = "";
  const reading = (async () => {
    for await (const chunk of child.stderr) output += DECODER.decode(chunk, { stream: true });
  })();
  try {
    await poll(() => exists(socket) ? true : undefined, {
      what: `the daemon's socket ${socket}`,
      timeoutMs: 120_000,
      intervalMs: 100,
    }).catch((e) => {
      throw new Error(`${(e as Error).message}\n${output}`);
    });
    const before = await processesNaming(socket);
    // npx, its shell, deno task and the daemon: the chain the README starts.
    assert.ok(before.length >= 3, `the chain runs: ${before.join(" ")}\n${output}`);
    Deno.kill(child.pid, signal);
    // npx is this test's child: its status is taken in the clean-up, and
    // until then it is a zombie, whose command line is empty.
    await poll(
      async () =>
        (await processesNaming(socket)).length === 0 && !exists(socket) ? true : undefined,
      { what: "no process of the chain and no socket", timeoutMs: 60_000, intervalMs: 100 },
    ).catch(async (e) => {
      const left = await processesNaming(socket);
      throw new Error(
        `${(e as Error).message}: left ${left.join(" ") || "none"}, socket ${
          exists(socket) ? "still there" : "gone"
        }\n${output}`,
      );
    });
  } finally {
    for (const pid of await processesNaming(socket)) {
      try {
        Deno.kill(pid, "SIGKILL");
      } catch {
        // Ended meanwhile.
      }
    }
    try {
      child.kill("SIGKILL");
    } catch {
      // Already gone.
    }
    await child.status;
    await reading;
    removeTree(dir);
  }
}

Deno.test({
  name: peer.name("SIGTERM to npx's pid stops deno task demo's daemon cleanly"),
  ignore: peer.ignore,
  fn: () => stopsWithLauncher("demo", [], "SIGTERM"),
});

Deno.test({
  name: peer.name("SIGTERM to npx's pid stops deno task start's daemon cleanly"),
  ignore: peer.ignore,
  // The simulated node, so that the daemon binds its socket without a runtime.
  fn: () => stopsWithLauncher("start", ["--simulate"], "SIGTERM"),
});
