/**
 * The daemon measured alone: `pods-api simulate-runtime` in one process, and
 * `pods-api serve --container-runtime-endpoint` reading it in another, so that
 * the simulator's memory and CPU are never counted as the daemon's. By default
 * the daemon is what ships: the bundle (`scripts/bundle.ts`), run with the
 * image's and the unit's command (`bundleCommand`: its V8 flags, its scoped
 * permissions, no code cache). `entry: "source"` runs `main.ts` as
 * `deno task start` does instead. Shared by bench/memory/run.ts,
 * bench/h2load/run.ts and the soak (tests/reliability/memory_soak_test.ts).
 *
 * Deno analyses a module's imports before it runs it, and keeps the result
 * in its cache directory (`DENO_DIR`) by the module's path and content. A
 * bundle Deno has not seen is parsed to find them: for this 570 KB bundle
 * that parse allocates about 17 MB of small blocks on a runtime thread,
 * which glibc keeps resident once they are freed (an allocation made after
 * them pins the top of that arena): the daemon then idles 13-15 MB higher
 * for its whole life (BENCHMARKS.md, "Memory"). That happens wherever Deno
 * has no answer kept for the bundle at its path: a new bundle in an empty
 * `DENO_DIR`, or one it cannot write. So a bundled daemon runs with a
 * `DENO_DIR` of its own: `analysisCache: "warm"` (the default) has Deno
 * analyse the bundle once beforehand, `"cold"` gives every daemon a new
 * empty one, and `"image"` runs the daemon in the image's own root file
 * system, laid out by the image build with its layer of Deno's analysis
 * (scripts/_image_root.ts), as a first start of the image does.
 *
 * @module
 */

import { buildBundle } from "../scripts/bundle.ts";
import { mallocEnvEntries } from "../scripts/_malloc_env.ts";
import { bundleCommand } from "../scripts/_permissions.ts";
import { inRootCommand } from "../scripts/_image_root.ts";
import {
  analyseBundleForImage,
  hostArchitecture,
  imageEntrypoint,
  imageEnv,
  platformInput,
} from "../scripts/image.ts";
import { v8FlagsArg } from "../scripts/_v8_flags.ts";
import { cpuMs, readProc } from "./_proc_usage.ts";
import { PERMS, type Proc, sleep, spawnProc, stopProc } from "./_child_process.ts";
import { NO_RATE_LIMIT_FLAGS, waitReady } from "./_sim_daemon.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const MAIN = `${ROOT}main.ts`;

/** Options of {@linkcode startDaemonAlone}. */
export interface DaemonAloneOptions {
  dir: string;
  tag: string;
  pods: number;
  /** Changes per second on the simulated node. */
  churn: number;
  /** `--relist-period` of the daemon. @default {"1s"} */
  relistPeriod?: string;
  /** Extra `serve` flags. */
  flags?: string[];
  /** Extra `simulate-runtime` flags (e.g. `--sync-period`). */
  runtimeFlags?: string[];
  /**
   * A script taking `simulate-runtime`'s flags to run instead of
   * `main.ts simulate-runtime` (bench/h2load/sim_runtime.ts: the same
   * runtime, writing its node's change timeline).
   */
  runtimeScript?: string;
  /** CPU for the daemon (taskset). */
  daemonCpu?: number;
  /** CPU for the simulated runtime (taskset). */
  runtimeCpu?: number;
  /**
   * What runs: the bundle as shipped, or `main.ts` from source. Heap
   * snapshots always run from source.
   *
   * @default {"bundle"}
   */
  entry?: "bundle" | "source";
  /** `--v8-flags=...` in place of the shipped flags (to compare V8 settings). */
  v8Flags?: string;
  /** Runs the daemon through bench/memory/heap_daemon.ts (heap snapshots on SIGUSR2). */
  heapSnapshots?: string;
  /** Another checkout whose daemon to run (a baseline), instead of this one. */
  daemonRoot?: string;
  /** Extra `deno run` flags of the daemon (e.g. `--cpu-prof`). */
  denoFlags?: string[];
  /**
   * Whether Deno has analysed the bundle before (`DENO_DIR`, see the module
   * doc); only for the bundle. @default {"warm"}
   */
  analysisCache?: "warm" | "cold" | "image";
}

/** A running simulated runtime and the daemon reading it. */
export interface DaemonAlone {
  readonly runtime: Proc;
  readonly daemon: Proc;
  readonly socket: string;
  readonly metricsPort: number;
  stop(): Promise<void>;
}

/** The bundle and a Deno cache directory that has analysed it. */
interface Bundle {
  readonly path: string;
  readonly warmDenoDir: string;
}

let bundle: Promise<Bundle> | undefined;

/**
 * Builds the bundle once per process, into a temporary directory, and has
 * Deno analyse it once there (`pods-api --help` with that `DENO_DIR`).
 */
function bundlePath(): Promise<Bundle> {
  bundle ??= (async () => {
    const dir = await Deno.makeTempDir({ prefix: "pods-api-bench-bundle-" });
    const path = `${dir}/pods-api.js`;
    const built = await buildBundle(path);
    if (built.code !== 0) throw new Error(`The bundle did not build:\n${built.log}`);
    const warmDenoDir = `${dir}/deno-dir`;
    const warm = await new Deno.Command(Deno.execPath(), {
      args: [...bundleCommand(Deno.execPath(), path).slice(1), "--help"],
      env: { DENO_DIR: warmDenoDir },
      stdout: "null",
      stderr: "piped",
    }).output();
    if (!warm.success) {
      throw new Error(`The bundle did not run:\n${new TextDecoder().decode(warm.stderr)}`);
    }
    return { path, warmDenoDir };
  })();
  return bundle;
}

/** The runtime's socket and the daemon's, at their paths in the image. */
const CRI_SOCKET_IN_IMAGE = "/run/containerd/containerd.sock";
const SOCKET_IN_IMAGE = "/run/pods-api/pods-api.sock";

let imageRoot: Promise<string> | undefined;

/**
 * The image's root file system for this machine's platform, as the image
 * build lays it out and fills layer 4 (once per process): its libraries, this
 * Deno, the bundle and Deno's analysis of it.
 */
function imageRootPath(): Promise<string> {
  imageRoot ??= (async () => {
    const { path } = await bundlePath();
    const root = `${await Deno.makeTempDir({ prefix: "pods-api-bench-image-" })}/root`;
    const made = await analyseBundleForImage(
      await platformInput(Deno.execPath(), hostArchitecture()),
      path,
      root,
    );
    if ("error" in made) throw new Error(`The image's root was not made: ${made.error}`);
    return root;
  })();
  return imageRoot;
}

/** The pid of a process's first child (unshare's daemon), once it has one. */
async function firstChild(pid: number): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const text = await readProc(`/proc/${pid}/task/${pid}/children`);
    const child = Number(text.trim().split(" ")[0]);
    if (child > 0) return child;
    await sleep(50);
  }
  throw new Error(`Process ${pid} started no child`);
}

/**
 * The image's and the unit's command for a bundle, its permissions scoped to
 * the socket's directory plus the simulated runtime's socket.
 */
function shippedCommand(
  path: string,
  socket: string,
  runtimeSocket: string,
  v8Flags: string | undefined,
): string[] {
  const socketDir = socket.slice(0, socket.lastIndexOf("/"));
  return bundleCommand(Deno.execPath(), path, { socketDir }).slice(1).map((arg) => {
    if (arg.startsWith("--v8-flags=") && v8Flags !== undefined) return v8Flags;
    if (arg.startsWith("--allow-read=")) return arg.replace("=", `=${runtimeSocket},`);
    if (arg.startsWith("--allow-write=")) return arg.replace("=", `=${runtimeSocket},`);
    return arg;
  });
}

/**
 * Starts `simulate-runtime` and the daemon on it; resolves once /readyz is ok.
 *
 * @param o Pods, churn, directories, CPUs and extra flags.
 * @returns The two processes.
 * @throws {Error} When either does not start.
 */
export async function startDaemonAlone(o: DaemonAloneOptions): Promise<DaemonAlone> {
  // In the image's root the runtime and the daemon use the image's own paths.
  const inImage = o.analysisCache === "image" && o.entry !== "source";
  const imageRootDir = inImage ? await imageRootPath() : "";
  const runtimeSocket = inImage
    ? `${imageRootDir}${CRI_SOCKET_IN_IMAGE}`
    : `${o.dir}/sim-${o.tag}.sock`;
  if (inImage) {
    await Deno.mkdir(`${imageRootDir}/run/containerd`, { recursive: true });
    await Deno.mkdir(`${imageRootDir}/run/pods-api`, { recursive: true });
  }
  const runtime = spawnProc(
    Deno.execPath(),
    [
      "run",
      "--frozen",
      ...PERMS,
      ...(o.runtimeScript === undefined ? [MAIN, "simulate-runtime"] : [o.runtimeScript]),
      "--socket",
      runtimeSocket,
      "--pods",
      String(o.pods),
      "--churn",
      String(o.churn),
      "--log-level",
      "warn",
      ...(o.runtimeFlags ?? []),
    ],
    `${o.dir}/sim-${o.tag}.log`,
    o.runtimeCpu,
  );
  const ready = await runtime.firstLine;
  if (ready === "") {
    throw new Error(`simulate-runtime did not start; see ${o.dir}/sim-${o.tag}.log`);
  }
  const socket = inImage
    ? `${imageRootDir}${SOCKET_IN_IMAGE}`
    : `${o.dir}/api-${o.tag}/pods-api.sock`;
  const portFile = `${o.dir}/port-${o.tag}`;
  const root = o.daemonRoot === undefined ? ROOT : `${o.daemonRoot.replace(/\/$/, "")}/`;
  // A baseline checkout, a profile or a heap snapshot runs from source.
  const fromSource = o.entry === "source" || o.heapSnapshots !== undefined ||
    o.daemonRoot !== undefined || o.denoFlags !== undefined;
  if (o.heapSnapshots !== undefined) Deno.env.set("PODS_API_HEAP_SNAPSHOT", o.heapSnapshots);
  const head = fromSource
    ? [
      "run",
      "--frozen",
      o.v8Flags ?? v8FlagsArg(),
      ...(o.denoFlags ?? []),
      ...PERMS,
      o.heapSnapshots === undefined ? `${root}main.ts` : `${root}bench/memory/heap_daemon.ts`,
    ]
    : shippedCommand((await bundlePath()).path, socket, runtimeSocket, o.v8Flags);
  // The environment every start path sets (scripts/_malloc_env.ts), unless
  // the caller's environment already says otherwise (to compare).
  const daemonEnv = mallocEnvEntries().filter((e) => Deno.env.get(e.split("=")[0]!) === undefined);
  if (!fromSource && !inImage) {
    const denoDir = o.analysisCache === "cold"
      ? await Deno.makeTempDir({ dir: o.dir, prefix: `deno-dir-${o.tag}-` })
      : (await bundlePath()).warmDenoDir;
    daemonEnv.push(`DENO_DIR=${denoDir}`);
  }
  // In the image: its environment alone, its entrypoint, its paths.
  const launch = inImage
    ? ["-i", ...imageEnv(), ...inRootCommand(imageRootDir, imageEntrypoint())]
    : [...daemonEnv, Deno.execPath(), ...head];
  const stopBoth = async (e: unknown): Promise<never> => {
    await stopProc(daemonProc);
    await stopProc(runtime);
    throw e;
  };
  const daemonProc = spawnProc(
    "env",
    [
      ...launch,
      "serve",
      "--container-runtime-endpoint",
      `unix://${inImage ? CRI_SOCKET_IN_IMAGE : runtimeSocket}`,
      "--socket",
      inImage ? SOCKET_IN_IMAGE : socket,
      "--hostname-override",
      "sim-node-1",
      // The node's kubelet paths stay out of it: a benchmark never serves the
      // kubelet's socket nor reads another daemon there as a kubelet.
      "--kubelet-compat-socket=",
      "--kubelet-pods-api-endpoint=none",
      "--pod-resources-endpoint=none",
      "--metrics-bind-address",
      "127.0.0.1:0",
      "--relist-period",
      o.relistPeriod ?? "1s",
      ...NO_RATE_LIMIT_FLAGS,
      "--log-level",
      "info",
      ...(o.flags ?? []),
    ],
    `${o.dir}/daemon-${o.tag}.log`,
    o.daemonCpu,
  );
  // In the image unshare forks the daemon: its figures are its child's.
  const daemon = inImage
    ? { ...daemonProc, pid: await firstChild(daemonProc.pid).catch(stopBoth) }
    : daemonProc;
  // The metrics port is in the start-up log line.
  let metricsPort = 0;
  for (let i = 0; i < 1200 && metricsPort === 0; i++) {
    await sleep(100);
    const log = await Deno.readTextFile(`${o.dir}/daemon-${o.tag}.log`).catch(() => "");
    const m = /"metrics":"127\.0\.0\.1:(\d+)"/.exec(log);
    if (m) metricsPort = Number(m[1]);
  }
  await Deno.writeTextFile(portFile, String(metricsPort));
  if (metricsPort === 0) {
    throw new Error(`The daemon did not start; see ${o.dir}/daemon-${o.tag}.log`);
  }
  await waitReady(metricsPort, 100, 1200);
  return {
    runtime,
    daemon,
    socket,
    metricsPort,
    async stop() {
      if (inImage) {
        // The daemon's own shutdown first; unshare ends with it.
        try {
          Deno.kill(daemon.pid, "SIGTERM");
        } catch { /* gone */ }
        await Promise.race([daemonProc.child.status, sleep(15_000)]);
      }
      await stopProc(daemonProc);
      await stopProc(runtime);
    },
  };
}

/**
 * The gRPC request body h2load sends: a 5-byte frame header and the message.
 *
 * @param message The serialized request.
 * @returns The framed body.
 */
export function grpcFrame(message: Uint8Array): Uint8Array {
  const out = new Uint8Array(5 + message.length);
  new DataView(out.buffer).setUint32(1, message.length);
  out.set(message, 5);
  return out;
}

/** What one h2load run reports. */
export interface H2loadResult {
  /** Requests completed per second (h2load's "finished in ..., N req/s"). */
  readonly rps: number;
  /** Requests that succeeded (2xx) / completed. */
  readonly succeeded: number;
  readonly completed: number;
  /**
   * CPU time (user + system) of `cpuPid` from the end of the warm-up to the
   * end of the run, ms; NaN without `cpuPid`.
   */
  readonly serverCpuMs: number;
  /** Wall time of that window, ms; NaN without `cpuPid`. */
  readonly windowMs: number;
}

/**
 * Runs h2load against a socket.
 *
 * @param o Socket, path, body file, clients, streams per client, duration, CPU.
 * @returns Its figures.
 * @throws {Error} When h2load is missing (Debian `nghttp2-client`) or fails.
 */
export async function h2load(o: {
  socket: string;
  path: string;
  body: string;
  clients: number;
  streams: number;
  seconds: number;
  cpu?: number;
  warmUpSeconds?: number;
  /** A server process whose CPU time over the measured window to report. */
  cpuPid?: number;
}): Promise<H2loadResult> {
  const args = [
    "-B",
    `unix:${o.socket}`,
    "-c",
    String(o.clients),
    "-m",
    String(o.streams),
    "-D",
    String(o.seconds),
    ...(o.warmUpSeconds ? ["--warm-up-time", String(o.warmUpSeconds)] : []),
    "-d",
    o.body,
    "-H",
    "content-type: application/grpc",
    "-H",
    "te: trailers",
    `http://localhost${o.path}`,
  ];
  const [program, argv] = o.cpu === undefined
    ? ["h2load", args]
    : ["taskset", ["-c", String(o.cpu), "h2load", ...args]];
  let out;
  let serverCpuMs = NaN;
  let windowMs = NaN;
  try {
    const run = new Deno.Command(program, { args: argv, stdout: "piped", stderr: "piped" })
      .spawn();
    if (o.cpuPid === undefined) {
      out = await run.output();
    } else {
      // h2load counts requests from the end of its warm-up: the CPU is read
      // from then on, so that it and the requests cover the same window.
      await sleep((o.warmUpSeconds ?? 0) * 1000);
      const cpu0 = await cpuMs(o.cpuPid);
      const t0 = performance.now();
      out = await run.output();
      serverCpuMs = await cpuMs(o.cpuPid) - cpu0;
      windowMs = performance.now() - t0;
    }
  } catch (err) {
    throw new Error(`h2load failed to start (apt-get install nghttp2-client): ${err}`);
  }
  const text = new TextDecoder().decode(out.stdout);
  const rps = /finished in [^,]+, ([\d.]+) req\/s/.exec(text);
  const reqs = /requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded/.exec(text);
  if (rps === null || reqs === null) {
    throw new Error(
      `h2load output not understood:\n${text}\n${new TextDecoder().decode(out.stderr)}`,
    );
  }
  return {
    rps: Number(rps[1]),
    completed: Number(reqs[1]),
    succeeded: Number(reqs[2]),
    serverCpuMs,
    windowMs,
  };
}

/**
 * @returns The 1-, 5- and 15-minute load averages, as /proc/loadavg gives them.
 */
export async function loadAverage(): Promise<string> {
  const out = await new Deno.Command("cat", { args: ["/proc/loadavg"], stdout: "piped" }).output();
  return new TextDecoder().decode(out.stdout).split(" ").slice(0, 3).join(" ");
}
