/**
 * An end-to-end harness: the real daemon (gRPC on a temporary UNIX socket,
 * metrics on a free port) over a scriptable fake source and a fake clock,
 * with relists driven by the test, plus grpc-js clients built the way any
 * client is: from the published proto (via @grpc/proto-loader).
 *
 * @module
 */

import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { parseServeConfig } from "../../src/config.ts";
import { type RunningDaemon, startDaemon } from "../../src/daemon.ts";
import { type Logger, silentLogger } from "../../src/log.ts";
import { createMetricsRegistry, type MetricsRegistry } from "../../src/metrics/registry.ts";
import { PODS_API_DESCRIPTOR } from "../../src/proto/mod.ts";
import { FakePodSource } from "../../src/sources/fake/mod.ts";
import type { PodSource } from "../../src/sources/mod.ts";
import type { ProcFs } from "../../src/sources/process/mod.ts";
import { type Clock, FakeClock, systemClock } from "../../src/clock.ts";
import { removeTree } from "./remove_tree.ts";

/** Options of {@linkcode startHarness}. */
export interface HarnessOptions<C extends Clock = FakeClock> {
  /** Extra `serve` flags. */
  flags?: string[];
  /** Sources to serve instead of one FakePodSource. */
  sources?: PodSource[];
  /**
   * The clock the daemon runs on (shared with the given sources). The
   * daemon's loops wait on it: with `runLoops`, pass `systemClock` for a
   * daemon that relists by itself, or a `FakeClock` the test advances.
   * @default {a new FakeClock}
   */
  clock?: C;
  /** The metrics registry (shared with sources that count into it). */
  registry?: MetricsRegistry;
  /**
   * Run the daemon's relist loops and change watches (on `clock`) instead of
   * leaving every relist to the test. @default {false}
   */
  runLoops?: boolean;
  /** Where the daemon logs. @default {silentLogger} */
  log?: Logger;
  /** Where process lookups read `/proc` and the cgroup tree. @default {the host's} */
  procFs?: ProcFs;
}

/** A running daemon under test. */
export interface Harness<C extends Clock = FakeClock> extends AsyncDisposable {
  readonly dir: string;
  readonly socket: string;
  readonly daemon: RunningDaemon;
  readonly source: FakePodSource;
  readonly clock: C;
  /** A `v1alpha1.Pods` client (pods as bytes). */
  readonly v1alpha1: PodsStub;
  /** A package-less `Pods` client (pods decoded by proto-loader's protobufjs). */
  readonly v1: PodsStub;
  /** Fetches a path of the metrics endpoint. */
  http(path: string): Promise<{ status: number; body: string }>;
}

/** A dynamically built grpc-js client of either service. */
export type PodsStub = grpc.Client & Record<string, (...args: unknown[]) => unknown>;

type ServiceCtor = new (address: string, creds: grpc.ChannelCredentials) => PodsStub;

/** The proto-loader package of the published API. */
export function loadPodsPackage(): grpc.GrpcObject {
  const definition = protoLoader.fromJSON(
    PODS_API_DESCRIPTOR as Parameters<typeof protoLoader.fromJSON>[0],
    {
      keepCase: true,
      longs: String,
      enums: String,
      defaults: false,
    },
  );
  return grpc.loadPackageDefinition(definition);
}

/**
 * Starts the daemon on a temporary socket with a fake source (not yet synced).
 *
 * @param options Extra flags and sources.
 * @returns The harness; dispose it to stop everything.
 */
export async function startHarness<C extends Clock = FakeClock>(
  options: HarnessOptions<C> = {},
): Promise<Harness<C>> {
  const dir = await Deno.makeTempDir({ prefix: "pods-api-test-" });
  const socket = `${dir}/api/pods-api.sock`;
  const config = parseServeConfig([
    "--socket",
    socket,
    // Never the kubelet's path on the machine the tests run on.
    "--kubelet-compat-socket=",
    "--metrics-bind-address",
    "127.0.0.1:0",
    "--hostname-override",
    "test-node",
    ...(options.flags ?? []),
  ]);
  // Without a clock of the caller's, C is its default, FakeClock.
  const clock = options.clock ?? (new FakeClock() as Clock as C);
  const source = new FakePodSource();
  const daemon = await startDaemon(config, {
    log: options.log ?? silentLogger,
    clock,
    sources: options.sources ?? [source],
    registry: options.registry ?? createMetricsRegistry(),
    runLoops: options.runLoops ?? false,
    ...(options.procFs === undefined ? {} : { procFs: options.procFs }),
  });
  const pkg = loadPodsPackage();
  const creds = grpc.credentials.createInsecure();
  const v1alpha1Ctor = (pkg.v1alpha1 as grpc.GrpcObject).Pods as unknown as ServiceCtor;
  const v1Ctor = pkg.Pods as unknown as ServiceCtor;
  const v1alpha1 = new v1alpha1Ctor(`unix:${socket}`, creds);
  const v1 = new v1Ctor(`unix:${socket}`, creds);
  return {
    dir,
    socket,
    daemon,
    source,
    clock,
    v1alpha1,
    v1,
    async http(path) {
      const res = await fetch(`http://127.0.0.1:${daemon.metricsPort}${path}`);
      return { status: res.status, body: await res.text() };
    },
    async [Symbol.asyncDispose]() {
      v1alpha1.close();
      v1.close();
      await daemon.close();
      removeTree(dir);
    },
  };
}

/** A unary call's outcome. */
export type UnaryResult<T> = { ok: true; value: T } | { ok: false; code: number; details: string };

/**
 * Calls a unary method and returns its value or status.
 *
 * @param stub The client.
 * @param method `ListPods` or `GetPod`.
 * @param request The request object.
 * @param metadata Extra metadata.
 * @returns The outcome.
 */
export function callUnary<T>(
  stub: PodsStub,
  method: "ListPods" | "GetPod",
  request: Record<string, unknown>,
  metadata: grpc.Metadata = new grpc.Metadata(),
): Promise<UnaryResult<T>> {
  return new Promise((resolve) => {
    const fn = stub[method]!.bind(stub) as (
      req: unknown,
      md: grpc.Metadata,
      cb: (err: grpc.ServiceError | null, value: T) => void,
    ) => void;
    fn(request, metadata, (err, value) => {
      resolve(err ? { ok: false, code: err.code, details: err.details } : { ok: true, value });
    });
  });
}

/** A watch stream collected by a test. */
export interface WatchRecorder {
  readonly messages: unknown[];
  /** Resolves with the final status once the stream ends. */
  readonly ended: Promise<{ code: number; details: string }>;
  /** Waits until at least `n` messages arrived (bounded by `timeoutMs`). */
  waitFor(n: number, timeoutMs?: number): Promise<void>;
  cancel(): void;
  pause(): void;
  resume(): void;
}

/**
 * Opens a watch and records what arrives.
 *
 * @param stub The client.
 * @param metadata Extra metadata (field masks).
 * @returns The recorder.
 */
export function watch(
  stub: PodsStub,
  metadata: grpc.Metadata = new grpc.Metadata(),
): WatchRecorder {
  const call =
    (stub.WatchPods as (req: unknown, md: grpc.Metadata) => grpc.ClientReadableStream<unknown>)
      .call(stub, {}, metadata);
  const messages: unknown[] = [];
  const waiters: Array<() => void> = [];
  const ended = new Promise<{ code: number; details: string }>((resolve) => {
    call.on("error", (err: grpc.ServiceError) => resolve({ code: err.code, details: err.details }));
    call.on("status", (s: grpc.StatusObject) => {
      if (s.code === grpc.status.OK) resolve({ code: s.code, details: s.details });
    });
  });
  call.on("data", (m: unknown) => {
    messages.push(m);
    for (const w of waiters.splice(0)) w();
  });
  return {
    messages,
    ended,
    async waitFor(n, timeoutMs = 10_000) {
      // Woken by each message; the timer only bounds a hang.
      let cancel = () => {};
      const timedOut = new Promise<never>((_, reject) => {
        cancel = systemClock.setTimer(timeoutMs, () =>
          reject(
            new Error(`Timed out waiting for ${n} watch messages, got ${messages.length}`),
          ));
      });
      try {
        while (messages.length < n) {
          await Promise.race([
            new Promise<void>((r) => waiters.push(r)),
            ended.then(() => {
              throw new Error(`Watch ended after ${messages.length} of ${n} messages`);
            }),
            timedOut,
          ]);
        }
      } finally {
        cancel();
      }
    },
    cancel: () => call.cancel(),
    pause: () => call.pause(),
    resume: () => call.resume(),
  };
}

/**
 * Builds metadata with a text field mask.
 *
 * @param paths Comma-separated paths.
 * @returns The metadata.
 */
export function maskMetadata(paths: string): grpc.Metadata {
  const md = new grpc.Metadata();
  md.set("x-kubernetes-fieldmask", paths);
  return md;
}
