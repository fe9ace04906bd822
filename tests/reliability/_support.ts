/**
 * Shared pieces of the reliability tests: a seeded PRNG, a daemon started
 * with a caller-owned metrics registry (so a source can count into it), a raw
 * grpc-js client with identity serializers (requests as bytes), metric reads
 * and the DESIGN.md §6 watch-invariant checker.
 *
 * @module
 */

import * as grpc from "@grpc/grpc-js";
import { Buffer } from "node:buffer";
import type { RunningDaemon } from "../../src/daemon.ts";
import type { MetricsRegistry } from "../../src/metrics/registry.ts";
import { decodePod } from "../../src/proto/mod.ts";
import type { PodSource } from "../../src/sources/mod.ts";
import { FakeClock } from "../../src/clock.ts";
import {
  podsServiceDefinition,
  type PodsServiceName,
} from "../_support/pods_service_definition.ts";
import { startHarness } from "../_support/daemon_harness.ts";
export { Prng } from "../_support/prng.ts";
export { pollUntil } from "../_support/poll.ts";
export { scrapedMetricValue } from "../_support/metric_value.ts";

/** Whether the long runs were asked for (`PODS_API_LONG=1`). */
export const LONG = Deno.env.get("PODS_API_LONG") === "1";

/** The seed of every generated input; `PODS_API_FUZZ_SEED` overrides it to explore. */
export const FUZZ_SEED = Number(Deno.env.get("PODS_API_FUZZ_SEED") ?? "20261129");

/** A daemon over given sources, with a registry the caller made. */
export interface TestDaemon extends AsyncDisposable {
  readonly dir: string;
  readonly socket: string;
  readonly daemon: RunningDaemon;
  readonly clock: FakeClock;
  readonly registry: MetricsRegistry;
}

/** Options of {@linkcode startTestDaemon}. */
export interface TestDaemonOptions {
  sources: PodSource[];
  registry?: MetricsRegistry;
  clock?: FakeClock;
  flags?: string[];
}

/**
 * Starts the real daemon on a temporary socket, relists driven by the test.
 *
 * @param options Sources, registry, clock and extra flags.
 * @returns The daemon; dispose it to stop and clean up.
 */
export async function startTestDaemon(options: TestDaemonOptions): Promise<TestDaemon> {
  const h = await startHarness(options);
  return {
    dir: h.dir,
    socket: h.socket,
    daemon: h.daemon,
    clock: h.clock,
    registry: h.daemon.registry,
    [Symbol.asyncDispose]: () => h[Symbol.asyncDispose](),
  };
}

/**
 * Reports whether a watch frame is INITIAL_SYNC_COMPLETE (`{type: 4}`, no pod).
 *
 * @param frame One raw `WatchPodsEvent`.
 * @returns `true` for the end of the initial list.
 */
export function isSyncComplete(frame: Uint8Array): boolean {
  return frame.length === 2 && frame[0] === 0x08 && frame[1] === EVENT_TYPE.INITIAL_SYNC_COMPLETE;
}

/**
 * Waits until a raw watch has received its INITIAL_SYNC_COMPLETE.
 *
 * @param w The watch.
 * @throws {Error} When the watch ends first.
 */
export async function waitSynced(w: RawWatch): Promise<void> {
  let seen = 0;
  for (;;) {
    await w.waitFor(seen + 1);
    if (w.frames.slice(seen).some(isSyncComplete)) return;
    if (w.frames.length === seen) throw new Error(`Watch ended: ${JSON.stringify(await w.ended)}`);
    seen = w.frames.length;
  }
}

/** A raw client of one service: requests and responses are bytes. */
export type RawStub = grpc.Client & {
  ListPods(
    req: Buffer,
    md: grpc.Metadata,
    opts: grpc.CallOptions,
    cb: (e: grpc.ServiceError | null, v?: Buffer) => void,
  ): grpc.ClientUnaryCall;
  GetPod(
    req: Buffer,
    md: grpc.Metadata,
    opts: grpc.CallOptions,
    cb: (e: grpc.ServiceError | null, v?: Buffer) => void,
  ): grpc.ClientUnaryCall;
  WatchPods(req: Buffer, md: grpc.Metadata, opts?: grpc.CallOptions): grpc.ClientReadableStream<
    Buffer
  >;
};

/**
 * Builds a grpc-js client of `prefix` (`v1alpha1.Pods` or `Pods`) that sends
 * request bodies as given, so garbage bodies reach the server.
 *
 * @param socket The UNIX socket path.
 * @param prefix The service name.
 * @param options Channel options.
 * @returns The client; `close()` it.
 */
export function rawClient(
  socket: string,
  prefix: PodsServiceName = "v1alpha1.Pods",
  options: grpc.ChannelOptions = {},
): RawStub {
  const Ctor = grpc.makeGenericClientConstructor(podsServiceDefinition(prefix), prefix);
  return new Ctor(`unix:${socket}`, grpc.credentials.createInsecure(), {
    "grpc.max_receive_message_length": -1,
    ...options,
  }) as unknown as RawStub;
}

/** A call's final status. */
export interface CallOutcome {
  code: number;
  details: string;
}

/**
 * Runs one unary call with a raw body.
 *
 * @param stub The raw client.
 * @param method `ListPods` or `GetPod`.
 * @param body The request bytes.
 * @param md Metadata.
 * @returns The status (OK included).
 */
export function rawUnary(
  stub: RawStub,
  method: "ListPods" | "GetPod",
  body: Uint8Array,
  md: grpc.Metadata = new grpc.Metadata(),
): Promise<CallOutcome> {
  return new Promise((resolve) => {
    stub[method](Buffer.from(body), md, { deadline: Date.now() + 30_000 }, (err) => {
      resolve(
        err ? { code: err.code, details: err.details } : { code: grpc.status.OK, details: "" },
      );
    });
  });
}

/** A raw watch with its frames. */
export interface RawWatch {
  readonly frames: Buffer[];
  readonly ended: Promise<CallOutcome>;
  cancel(): void;
  /** Resolves once `n` frames arrived or the stream ended. */
  waitFor(n: number): Promise<void>;
}

/**
 * Opens a watch with a raw body.
 *
 * @param stub The raw client.
 * @param md Metadata.
 * @param body The request bytes.
 * @returns The watch.
 */
export function rawWatch(
  stub: RawStub,
  md: grpc.Metadata = new grpc.Metadata(),
  body: Uint8Array = new Uint8Array(),
): RawWatch {
  return recordWatch(stub.WatchPods(Buffer.from(body), md));
}

/**
 * Records a server stream of any service (frames as bytes) until it ends.
 *
 * @param call The client's side of the stream.
 * @returns The watch.
 */
export function recordWatch(call: grpc.ClientReadableStream<Buffer>): RawWatch {
  const frames: Buffer[] = [];
  const waiters = new Set<() => void>();
  let settled = false;
  const ended = new Promise<CallOutcome>((resolve) => {
    const done = (o: CallOutcome) => {
      settled = true;
      resolve(o);
      for (const w of waiters) w();
    };
    call.on("error", (err: grpc.ServiceError) => done({ code: err.code, details: err.details }));
    call.on("status", (s: grpc.StatusObject) => {
      if (s.code === grpc.status.OK) done({ code: s.code, details: s.details });
    });
  });
  call.on("data", (b: Buffer) => {
    frames.push(b);
    for (const w of waiters) w();
  });
  return {
    frames,
    ended,
    cancel: () => call.cancel(),
    waitFor(n) {
      return new Promise((resolve) => {
        const check = () => {
          if (frames.length >= n || settled) {
            waiters.delete(check);
            resolve();
          }
        };
        waiters.add(check);
        check();
      });
    },
  };
}

/** One decoded `v1alpha1.WatchPodsEvent`. */
export interface WatchEventFrame {
  type: number;
  uid: string | undefined;
  deletion: boolean;
  phase: string | undefined;
}

/**
 * Decodes a `WatchPodsEvent{type=1, pod=2}` frame.
 *
 * @param frame The bytes.
 * @returns Type, UID, deletion mark and phase of the pod.
 */
export function decodeWatchFrame(frame: Uint8Array): WatchEventFrame {
  let type = 0;
  let pod: Uint8Array | undefined;
  let i = 0;
  const varint = () => {
    let v = 0;
    let s = 0;
    for (;;) {
      const b = frame[i++]!;
      v += (b & 0x7f) * 2 ** s;
      if (b < 0x80) return v;
      s += 7;
    }
  };
  while (i < frame.length) {
    const tag = varint();
    if (tag === 0x08) type = varint();
    else if (tag === 0x12) {
      const len = varint();
      pod = frame.subarray(i, i + len);
      i += len;
    } else throw new SyntaxError(`Cannot decode watch frame: tag "${tag}"`);
  }
  if (pod === undefined || pod.length === 0) {
    return { type, uid: undefined, deletion: false, phase: undefined };
  }
  const p = decodePod(pod);
  return {
    type,
    uid: p.metadata?.uid,
    deletion: p.metadata?.deletionTimestamp !== undefined,
    phase: (p.status as { phase?: string } | undefined)?.phase,
  };
}

const EVENT = { ADDED: 1, MODIFIED: 2, DELETED: 3, INITIAL_SYNC_COMPLETE: 4 } as const;

/**
 * Checks DESIGN.md §6.4 on one watch's frames: per UID one ADDED first, nothing
 * after DELETED, deletionTimestamp never dropped, no phase going back, phase
 * never empty; one INITIAL_SYNC_COMPLETE.
 *
 * @param frames The decoded frames, in order.
 * @returns The violations found (empty when none).
 */
export function watchViolations(frames: readonly WatchEventFrame[]): string[] {
  const out: string[] = [];
  const seen = new Map<string, { deleted: boolean; deletion: boolean; phase: string }>();
  let syncs = 0;
  const rank: Record<string, number> = { Pending: 0, Running: 1, Succeeded: 2, Failed: 2 };
  frames.forEach((f, i) => {
    if (f.type === EVENT.INITIAL_SYNC_COMPLETE) {
      syncs++;
      return;
    }
    const uid = f.uid ?? "";
    const prev = seen.get(uid);
    if (!f.phase) out.push(`#${i} ${uid}: empty phase`);
    if (f.type === EVENT.ADDED && prev !== undefined) out.push(`#${i} ${uid}: duplicate ADDED`);
    if (f.type !== EVENT.ADDED && prev === undefined) out.push(`#${i} ${uid}: change before ADDED`);
    if (prev?.deleted) out.push(`#${i} ${uid}: event after DELETED`);
    if (prev?.deletion && !f.deletion) out.push(`#${i} ${uid}: deletionTimestamp disappeared`);
    if (prev !== undefined && f.phase !== undefined) {
      const a = rank[prev.phase] ?? 0;
      const b = rank[f.phase] ?? 0;
      if (b < a || (a === 2 && f.phase !== prev.phase)) {
        out.push(`#${i} ${uid}: phase ${prev.phase} -> ${f.phase}`);
      }
    }
    if (f.type === EVENT.DELETED && !f.deletion) out.push(`#${i} ${uid}: DELETED without mark`);
    seen.set(uid, {
      deleted: f.type === EVENT.DELETED,
      deletion: f.deletion || (prev?.deletion ?? false),
      phase: f.phase ?? prev?.phase ?? "",
    });
  });
  if (syncs !== 1) out.push(`INITIAL_SYNC_COMPLETE seen ${syncs} times`);
  return out;
}

/** The watch event type numbers of `v1alpha1.EventType`. */
export const EVENT_TYPE = EVENT;

/**
 * Records a check's figures: printed with the test's output, and appended as
 * one JSON line to the file named by `PODS_API_RELIABILITY_REPORT` (what
 * `scripts/reliability/run.sh` collects for RELIABILITY.md).
 *
 * @param check The check's name.
 * @param text One human-readable line.
 * @param figures The numbers behind it.
 */
export async function report(
  check: string,
  text: string,
  figures: Record<string, unknown> = {},
): Promise<void> {
  const encoder = new TextEncoder();
  await Deno.stdout.write(encoder.encode(`${check}: ${text}\n`));
  const file = Deno.env.get("PODS_API_RELIABILITY_REPORT");
  if (file) {
    const line = JSON.stringify({ check, text, figures, long: LONG, seed: FUZZ_SEED });
    await Deno.writeTextFile(file, line + "\n", { append: true });
  }
}
