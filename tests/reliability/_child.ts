/**
 * The daemon as a separate process (`deno run main.ts serve --simulate`) with
 * the permission flags of the `start` task, for signal, memory and
 * file-descriptor checks that need a process of its own.
 *
 * @module
 */

import * as grpc from "@grpc/grpc-js";
import { fileURLToPath } from "node:url";
import { removeTree } from "../_support/remove_tree.ts";
import { pollUntil, rawClient, rawUnary } from "./_support.ts";

/** The permissions of `deno task start` (deno.json). */
export const SERVE_PERMISSIONS = [
  "--frozen",
  "--allow-read",
  "--allow-write",
  "--allow-net",
  "--allow-env",
  "--allow-sys",
] as const;

const MAIN = fileURLToPath(new URL("../../main.ts", import.meta.url));

/** A daemon child process. */
export interface ServeChild extends AsyncDisposable {
  readonly dir: string;
  readonly socket: string;
  readonly process: Deno.ChildProcess;
  readonly pid: number;
  /** Resolves with exit status and everything the child wrote, once it exits. */
  readonly output: Promise<{ code: number; stderr: string; stdout: string }>;
  /**
   * Runs `fn`; if it throws after the child died on its own, the error names
   * the exit code and the end of the child's stderr (a crash, not a test bug).
   */
  explain<T>(fn: () => Promise<T>): Promise<T>;
}

/**
 * Starts `main.ts serve --simulate` on a temporary socket and waits until
 * ListPods answers OK (sources synced).
 *
 * @param flags Extra `serve` flags.
 * @param options Extra `deno run` flags (e.g. `--v8-flags=...`), never permissions;
 *   `simulate: false` leaves out `--simulate` (pass `--container-runtime-endpoint`);
 *   `maxOpenFiles` runs it under that descriptor limit (`ulimit -n`).
 * @returns The child; disposing it kills it (SIGKILL) if still running.
 */
export async function startServeChild(
  flags: string[] = [],
  options: { denoFlags?: string[]; simulate?: boolean; maxOpenFiles?: number } = {},
): Promise<ServeChild> {
  const dir = await Deno.makeTempDir({ prefix: "pods-api-rel-child-" });
  const socket = `${dir}/run/pods-api.sock`;
  // --simulate binds its simulated CRI socket beside the API socket before
  // the API socket's directory is made: make it here (as the daemon would).
  await Deno.mkdir(`${dir}/run`, { mode: 0o750 });
  // A descriptor limit, as the unit's LimitNOFILE sets it: the shell sets it and execs Deno.
  const limit = options.maxOpenFiles === undefined
    ? []
    : ["-c", `ulimit -n ${options.maxOpenFiles} && exec "$@"`, "--", Deno.execPath()];
  const process = new Deno.Command(limit.length === 0 ? Deno.execPath() : "/bin/bash", {
    args: [
      ...limit,
      "run",
      ...SERVE_PERMISSIONS,
      ...(options.denoFlags ?? []),
      MAIN,
      "serve",
      ...(options.simulate === false ? [] : ["--simulate"]),
      "--socket",
      socket,
      // Never the kubelet's path on the machine the tests run on.
      "--kubelet-compat-socket=",
      "--metrics-bind-address",
      "127.0.0.1:0",
      "--hostname-override",
      "rel-node",
      ...flags,
    ],
    stdout: "piped",
    stderr: "piped",
    stdin: "null",
  }).spawn();
  let exited = false;
  const output = process.output().then((o) => {
    exited = true;
    return {
      code: o.code,
      stdout: new TextDecoder().decode(o.stdout),
      stderr: new TextDecoder().decode(o.stderr),
    };
  });
  const stub = rawClient(socket);
  try {
    await pollUntil(async () => {
      if (exited) throw new Error(`Daemon exited early: ${(await output).stderr}`);
      return (await rawUnary(stub, "ListPods", new Uint8Array())).code === grpc.status.OK;
    }, "the daemon child to serve");
  } catch (err) {
    stub.close();
    throw err;
  }
  return {
    dir,
    socket,
    process,
    pid: process.pid,
    output,
    async explain(fn) {
      try {
        return await fn();
      } catch (err) {
        // The client may notice before the exit is reaped: give it a moment.
        const o = await Promise.race([
          output,
          new Promise<undefined>((r) => setTimeout(r, 2_000, undefined)),
        ]);
        if (o === undefined) throw err;
        const known = /nghttp2|free\(\)/.test(o.stderr) || o.code === 134 || o.code === 139
          ? " (the Deno node:http2 crash of denoland/deno#36788: see RELIABILITY.md)"
          : "";
        throw new Error(
          `${(err as Error).message}; the daemon exited with ${o.code}${known}: ${
            o.stderr.slice(-1500)
          }`,
        );
      }
    },
    async [Symbol.asyncDispose]() {
      stub.close();
      if (!exited) {
        try {
          process.kill("SIGKILL");
        } catch {
          // already gone
        }
      }
      await output;
      removeTree(dir);
    },
  };
}

/**
 * Reads a process's resident memory and open file descriptors from /proc.
 *
 * @param pid The process.
 * @returns VmRSS in KiB and the number of entries in /proc/<pid>/fd.
 */
export async function processUsage(pid: number): Promise<{ rssKiB: number; fds: number }> {
  // Deno wants --allow-all to read another process's /proc entries; a shell may.
  const out = await new Deno.Command("/bin/sh", {
    args: ["-c", `grep '^VmRSS:' /proc/${pid}/status; ls /proc/${pid}/fd | wc -l`],
    stdout: "piped",
    stderr: "null",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  const rss = /^VmRSS:\s+(\d+) kB$/m.exec(text);
  const fds = /^(\d+)$/m.exec(text);
  if (rss === null || fds === null) throw new Error(`Cannot read /proc/${pid}: "${text}"`);
  return { rssKiB: Number(rss[1]), fds: Number(fds[1]) };
}
