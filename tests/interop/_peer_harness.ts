/**
 * Shared pieces of the real-peer interop tests (DESIGN.md §13, issue 10 item 6)
 * (which peers they need, and the gate on them, are in
 * tests/_support/peers.ts): the daemon as a child process
 * (`main.ts serve --simulate`, via tests/reliability/_child.ts), the health
 * check every peer test ends with, Go builds in GOPATH mode and running a
 * peer process.
 *
 * Each test works against whatever transport the daemon has: it only talks
 * to the daemon's socket and reads /proc/<pid>.
 *
 * @module
 */

import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import { fileURLToPath } from "node:url";
import { processUsage, type ServeChild, startServeChild } from "../reliability/_child.ts";
import { pollUntil, rawClient, rawUnary } from "../reliability/_support.ts";

/** Whether the long runs were asked for (`PODS_API_LONG=1`, `deno task test:long`). */
export const LONG = Deno.env.get("PODS_API_LONG") === "1";

/** The repository root. */
export const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/**
 * Connection cycles per peer: `PODS_API_INTEROP_CYCLES` if set, else 10 000
 * with `PODS_API_LONG=1`, else `ci` (sized so a test takes well under a minute).
 *
 * @param ci The bounded default.
 * @returns The cycle count.
 */
export function cycleCount(ci: number): number {
  const set = Deno.env.get("PODS_API_INTEROP_CYCLES");
  if (set !== undefined) return Number(set);
  return LONG ? 10_000 : ci;
}

/**
 * Serve flags of the daemon under test: 50 simulated pods (a ListPods body of
 * about 100 KB, past the 64 KiB initial HTTP/2 window, so flow control is
 * exercised) and no effective rate limit (the peers' statuses stay about the
 * transport).
 */
export const INTEROP_SERVE_FLAGS = [
  "--simulate-pods",
  "50",
  "--rate-limit-qps",
  "1e9",
  "--rate-limit-burst",
  "1000000",
  "--log-level",
  "warn",
];

/**
 * The daemon's V8 old-space cap: without it V8 grows its heap lazily to
 * hundreds of MiB before a major GC, and RSS would say nothing about what the
 * daemon retains (the same cap as tests/reliability/load_test.ts).
 */
export const HEAP_CAP_MIB = 64;

/**
 * How much RSS may grow over the run, after a warm-up: retained memory, not
 * allocation noise (heap capped at {@linkcode HEAP_CAP_MIB}). The same 64 MiB
 * the issue 10 memory target allows above idle.
 */
export const RSS_MARGIN_KIB = 64 * 1024;

/**
 * File descriptors the daemon may hold above its warmed-up baseline once every
 * peer connection is closed. Measured on the grpc-js daemon: 0 after 2 400
 * Go cycles (29 before and after; 30 once, a connection the daemon had not
 * yet seen close); the baseline is taken after a warm-up run of the same
 * peer, so lazily opened descriptors (code caches, pools) are already in it.
 */
export const FD_SLACK = 1;

/** A started daemon child with its warmed-up baseline. */
export interface PeerDaemon extends AsyncDisposable {
  readonly child: ServeChild;
  readonly socket: string;
  readonly pid: number;
}

/**
 * Starts `main.ts serve --simulate` as a child process.
 *
 * @param flags Extra serve flags.
 * @returns The daemon; disposing it kills it.
 */
export async function startPeerDaemon(flags: string[] = []): Promise<PeerDaemon> {
  const child = await startServeChild([...INTEROP_SERVE_FLAGS, ...flags], {
    denoFlags: [`--v8-flags=--max-old-space-size=${HEAP_CAP_MIB}`],
  });
  return {
    child,
    socket: child.socket,
    pid: child.pid,
    [Symbol.asyncDispose]: () => child[Symbol.asyncDispose](),
  };
}

/** RSS and open descriptors of the daemon. */
export interface Usage {
  rssKiB: number;
  fds: number;
}

/**
 * Takes the baseline: the lowest fd count over a short settle (closed
 * connections leave /proc/<pid>/fd once the server saw them close).
 *
 * @param pid The daemon.
 * @returns The baseline usage.
 */
export async function baseline(pid: number): Promise<Usage> {
  let best = await processUsage(pid);
  for (let i = 0; i < 20; i++) {
    await new Promise((r) => setTimeout(r, 25));
    const now = await processUsage(pid);
    if (now.fds < best.fds || (now.fds === best.fds && now.rssKiB < best.rssKiB)) best = now;
  }
  return best;
}

/** What {@linkcode assertDaemonHealthy} saw. */
export interface HealthReport {
  before: Usage;
  after: Usage;
  finalList: { code: number; details: string };
}

/**
 * The end-of-run checks of every peer test: the daemon process is alive, its
 * open fds came back to the baseline (within {@linkcode FD_SLACK}, polled),
 * its RSS is within {@linkcode RSS_MARGIN_KIB} of the baseline, and a final
 * ListPods on a fresh connection is answered OK.
 *
 * @param daemon The daemon.
 * @param before The baseline.
 * @param label The peer, for messages.
 * @returns What was measured (also printed).
 * @throws {AssertionError} When a check fails; a dead daemon's exit status and stderr are named.
 */
export async function assertDaemonHealthy(
  daemon: PeerDaemon,
  before: Usage,
  label: string,
): Promise<HealthReport> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const alive = await Promise.race([
    daemon.child.output,
    new Promise<undefined>((r) => timer = setTimeout(r, 200, undefined)),
  ]);
  clearTimeout(timer);
  if (alive !== undefined) {
    assert.fail(
      `${label}: the daemon exited with ${alive.code}: ${alive.stderr.slice(-2000)}`,
    );
  }
  let after = await processUsage(daemon.pid);
  await pollUntil(async () => {
    after = await processUsage(daemon.pid);
    return after.fds <= before.fds + FD_SLACK;
  }, "fds to return").catch(() => {});
  const finalList = await daemon.child.explain(async () => {
    const stub = rawClient(daemon.socket);
    try {
      return await rawUnary(stub, "ListPods", new Uint8Array());
    } finally {
      stub.close();
    }
  });
  await log(
    `${label}: fds ${before.fds} -> ${after.fds}, RSS ${before.rssKiB} -> ${after.rssKiB} KiB ` +
      `(${signed(after.rssKiB - before.rssKiB)}), final ListPods ${grpc.status[finalList.code]}`,
  );
  assert.equal(finalList.code, grpc.status.OK, `${label}: final ListPods: ${finalList.details}`);
  assert.ok(
    after.fds <= before.fds + FD_SLACK,
    `${label}: open fds ${before.fds} -> ${after.fds} (slack ${FD_SLACK})`,
  );
  assert.ok(
    after.rssKiB - before.rssKiB <= RSS_MARGIN_KIB,
    `${label}: RSS ${before.rssKiB} -> ${after.rssKiB} KiB, more than ${RSS_MARGIN_KIB} KiB above`,
  );
  return { before, after, finalList };
}

function signed(n: number): string {
  return n >= 0 ? `+${n}` : String(n);
}

/**
 * Writes one line to the test output.
 *
 * @param line The text.
 */
export async function log(line: string): Promise<void> {
  await Deno.stdout.write(new TextEncoder().encode(line + "\n"));
}

/** A finished peer process. */
export interface PeerRun {
  code: number;
  stdout: string;
  stderr: string;
  /** Whether it was killed for running past its time limit. */
  timedOut: boolean;
}

/** Options of {@linkcode runPeer}. */
export interface RunPeerOptions {
  /** Kill it (SIGKILL) after this long. */
  timeoutMs: number;
  env?: Record<string, string>;
  cwd?: string;
  /** Kill it with SIGKILL as soon as its stdout contains this (a kill -9 close). */
  killWhen?: string;
}

/**
 * Runs a peer to completion (or its time limit) and collects its output.
 *
 * @param cmd The program.
 * @param args Its arguments.
 * @param options Time limit, environment, working directory.
 * @returns Exit code and output.
 */
export async function runPeer(
  cmd: string,
  args: string[],
  options: RunPeerOptions,
): Promise<PeerRun> {
  const child = new Deno.Command(cmd, {
    args,
    cwd: options.cwd ?? ROOT,
    ...(options.env === undefined ? {} : { env: options.env }),
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let timedOut = false;
  const kill = () => {
    try {
      child.kill("SIGKILL");
    } catch {
      // already gone
    }
  };
  const timer = setTimeout(() => {
    timedOut = true;
    kill();
  }, options.timeoutMs);
  const decoder = new TextDecoder();
  let stdout = "";
  const reading = (async () => {
    for await (const chunk of child.stdout) {
      stdout += decoder.decode(chunk, { stream: true });
      if (options.killWhen !== undefined && stdout.includes(options.killWhen)) kill();
    }
  })();
  const errText = new Response(child.stderr).text();
  const status = await child.status;
  clearTimeout(timer);
  await reading;
  return { code: status.code, stdout, stderr: await errText, timedOut };
}

/**
 * Parses the last JSON line a peer printed.
 *
 * @param run The finished peer.
 * @param label The peer, for messages.
 * @returns The parsed summary.
 * @throws {Error} When there is none (exit code and stderr are named).
 */
export function lastJson<T>(run: PeerRun, label: string): T {
  const lines = run.stdout.trim().split("\n").filter((l) => l.startsWith("{"));
  const last = lines.at(-1);
  if (last === undefined) {
    throw new Error(
      `${label} printed no summary (exit ${run.code}${run.timedOut ? ", timed out" : ""}): ` +
        run.stderr.slice(-2000),
    );
  }
  return JSON.parse(last) as T;
}

const goBuilds = new Map<string, Promise<string>>();
const goDirs: string[] = [];
globalThis.addEventListener("unload", () => {
  for (const dir of goDirs) {
    try {
      Deno.removeSync(dir, { recursive: true });
    } catch {
      // already gone
    }
  }
});

/**
 * Builds a Go program of this repository in GOPATH mode against Debian's
 * packages (once per test process).
 *
 * @param pkg The package directory relative to the root, e.g. `./tests/interop/go/podsclient`.
 * @returns The path of the built binary (in a temporary directory).
 * @throws {Error} When `go build` fails (its output is named).
 */
export function buildGo(pkg: string): Promise<string> {
  let built = goBuilds.get(pkg);
  if (built === undefined) {
    built = (async () => {
      const dir = await Deno.makeTempDir({ prefix: "pods-api-go-" });
      goDirs.push(dir);
      const out = `${dir}/${pkg.split("/").at(-1)}`;
      const run = await new Deno.Command("go", {
        args: ["build", "-o", out, pkg],
        cwd: ROOT,
        env: { GO111MODULE: "off", GOPATH: `${dir}/gopath:/usr/share/gocode`, GOFLAGS: "" },
        stdout: "piped",
        stderr: "piped",
      }).output();
      if (!run.success) {
        throw new Error(`go build ${pkg} failed: ${new TextDecoder().decode(run.stderr)}`);
      }
      return out;
    })();
    goBuilds.set(pkg, built);
  }
  return built;
}

/**
 * A peer's summary line of statuses, for the test output.
 *
 * @param statuses Status name → count.
 * @returns e.g. "OK 120, CANCELLED 30".
 */
export function formatStatuses(statuses: Record<string, number>): string {
  return Object.entries(statuses).sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k} ${v}`).join(", ");
}
