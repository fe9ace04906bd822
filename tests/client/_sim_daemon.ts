/**
 * The daemon as a user runs it (`pods-api serve --simulate` in its own
 * process), killed and restarted at will, and the CLI run the same way:
 * a subprocess with arguments, environment, stdout, stderr and an exit code.
 *
 * @module
 */

import { GrpcError, PodsClient, STATUS } from "../../src/client/mod.ts";
import { poll } from "../_support/poll.ts";

const MAIN = new URL("../../main.ts", import.meta.url).pathname;
/** The permissions of `deno task client` and `deno task start`. */
export const RUN_FLAGS = [
  "run",
  "--frozen",
  "--allow-read",
  "--allow-write",
  "--allow-net",
  "--allow-env",
  "--allow-sys",
];

/** Options of {@linkcode startSimDaemon}. */
export interface SimDaemonOptions {
  /** Pods on the simulated node. @default {12} */
  pods?: number;
  /** Changes per second. @default {0} */
  churn?: number;
  /** Seed of the simulated node. @default {7} */
  seed?: number;
  /** Extra `serve` flags. */
  flags?: string[];
  /** The socket; default: a new temporary directory's. */
  socket?: string;
  /** Wait until the daemon answers ListPods. @default {true} */
  waitReady?: boolean;
}

/** A `serve --simulate` process. */
export interface SimDaemon extends AsyncDisposable {
  readonly socket: string;
  readonly dir: string;
  /** Kills the process (SIGKILL by default) and waits for it. */
  kill(signal?: Deno.Signal): Promise<void>;
  /** Starts it again on the same socket, optionally with other options. */
  restart(options?: Omit<SimDaemonOptions, "socket">): Promise<void>;
}

function serveArgs(socket: string, options: SimDaemonOptions): string[] {
  return [
    ...RUN_FLAGS,
    MAIN,
    "serve",
    "--simulate",
    "--simulate-pods",
    String(options.pods ?? 12),
    "--simulate-churn",
    String(options.churn ?? 0),
    "--simulate-seed",
    String(options.seed ?? 7),
    "--socket",
    socket,
    // Never the kubelet's path on the machine the tests run on.
    "--kubelet-compat-socket=",
    "--metrics-bind-address",
    "127.0.0.1:0",
    "--hostname-override",
    "vm",
    "--log-level",
    "error",
    ...(options.flags ?? []),
  ];
}

/**
 * Waits until the daemon on `socket` answers a ListPods (or refuses it for the rate limit).
 *
 * @param socket The socket.
 * @param timeoutMs Give up after this long (a failure bound, not a measurement).
 */
export async function waitReady(socket: string, timeoutMs = 30_000): Promise<void> {
  using client = new PodsClient({ socket, rateLimitRetries: 0 });
  let last: unknown;
  await poll(async () => {
    try {
      await client.listPods();
      return true;
    } catch (err) {
      // Refused by the rate limit: up and answering.
      if (err instanceof GrpcError && err.code === STATUS.RESOURCE_EXHAUSTED) return true;
      last = err;
      return undefined;
    }
  }, { what: `the daemon on ${socket} to answer (last: ${last})`, timeoutMs, intervalMs: 50 })
    .catch((err) => {
      throw last ?? err;
    });
}

/**
 * Starts `pods-api serve --simulate` in a subprocess.
 *
 * @param options Node size, churn, seed, flags, socket.
 * @returns The daemon; dispose it to kill it and remove its directory.
 */
export async function startSimDaemon(options: SimDaemonOptions = {}): Promise<SimDaemon> {
  const dir = await Deno.makeTempDir({ prefix: "pods-api-cli-" });
  const socket = options.socket ?? `${dir}/api/pods-api.sock`;
  let current = options;
  let child: Deno.ChildProcess | undefined;
  const spawn = async () => {
    child = new Deno.Command(Deno.execPath(), {
      args: serveArgs(socket, current),
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    if (current.waitReady !== false) await waitReady(socket);
  };
  const kill = async (signal: Deno.Signal = "SIGKILL") => {
    if (child === undefined) return;
    try {
      child.kill(signal);
    } catch {
      // Already gone.
    }
    await child.status;
    child = undefined;
  };
  await spawn();
  return {
    socket,
    dir,
    kill,
    async restart(next = {}) {
      await kill();
      current = { ...options, ...next };
      await spawn();
    },
    async [Symbol.asyncDispose]() {
      await kill("SIGTERM");
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}

/** What a CLI run printed and how it ended. */
export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Options of {@linkcode runCli}. */
export interface RunCliOptions {
  /** Environment variables to add. */
  env?: Record<string, string>;
  /** Run under this prefix (e.g. setpriv), with this deno. */
  prefix?: string[];
  deno?: string;
}

/**
 * Runs `pods-api ARGS` as a user would, from the source tree.
 *
 * @param args The arguments.
 * @param options Environment.
 * @returns Exit code and output.
 */
export async function runCli(
  args: readonly string[],
  options: RunCliOptions = {},
): Promise<CliResult> {
  // Only what a shell would pass, so a PODS_API_SOCKET of the test runner does not leak in.
  const env: Record<string, string> = { NO_COLOR: "1", PATH: Deno.env.get("PATH") ?? "" };
  for (const name of ["HOME", "DENO_DIR", "TZ"]) {
    const value = Deno.env.get(name);
    if (value !== undefined) env[name] = value;
  }
  Object.assign(env, options.env);
  const deno = options.deno ?? Deno.execPath();
  const [cmd, ...prefixArgs] = options.prefix ?? [deno];
  const { code, stdout, stderr } = await new Deno.Command(cmd!, {
    args: [...prefixArgs, ...(options.prefix ? [deno] : []), ...RUN_FLAGS, MAIN, ...args],
    env,
    clearEnv: true,
    stdin: "null",
  }).output();
  const decoder = new TextDecoder();
  return { code, stdout: decoder.decode(stdout), stderr: decoder.decode(stderr) };
}

/** A CLI process still running (e.g. `watch`), read line by line. */
export interface LiveCli extends AsyncDisposable {
  /** The next stdout line; throws when the process ends first. */
  nextLine(): Promise<string>;
  /** Everything on stderr so far. */
  stderr(): string;
  /** Sends SIGINT (Ctrl-C) and returns the exit code. */
  interrupt(): Promise<number>;
}

/**
 * Starts `pods-api ARGS` and reads its output as it comes.
 *
 * @param args The arguments.
 * @returns The running process.
 */
export function spawnCli(args: readonly string[]): LiveCli {
  const child = new Deno.Command(Deno.execPath(), {
    args: [...RUN_FLAGS, MAIN, ...args],
    env: { NO_COLOR: "1", PATH: Deno.env.get("PATH") ?? "", HOME: Deno.env.get("HOME") ?? "/" },
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let err = "";
  const errDone = child.stderr.pipeThrough(new TextDecoderStream()).pipeTo(
    new WritableStream({ write: (chunk) => void (err += chunk) }),
  );
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  let ended = false;
  return {
    async nextLine() {
      for (;;) {
        const nl = buffered.indexOf("\n");
        if (nl >= 0) {
          const line = buffered.slice(0, nl);
          buffered = buffered.slice(nl + 1);
          return line;
        }
        if (ended) throw new Error(`The CLI ended; stderr: ${err}`);
        const { value, done } = await reader.read();
        if (done) ended = true;
        else buffered += value;
      }
    },
    stderr: () => err,
    async interrupt() {
      try {
        child.kill("SIGINT");
      } catch {
        // Already ended.
      }
      // Read what it still prints while it stops: a CLI blocked on a full
      // stdout pipe cannot handle the signal, and would never exit.
      const drained = (async () => {
        while (!ended) {
          const { done } = await reader.read();
          if (done) ended = true;
        }
      })();
      const { code } = await child.status;
      await drained;
      await errDone;
      return code;
    },
    async [Symbol.asyncDispose]() {
      await this.interrupt();
    },
  };
}
