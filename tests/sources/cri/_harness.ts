/**
 * A simulated CRI runtime served on a temporary socket, with a client and a
 * CRI source reading it: shared by the CRI source's tests.
 *
 * @module
 */

import { Registry } from "../../../src/metrics/exposition.ts";
import { createLogger, type Logger } from "../../../src/log.ts";
import { createMetrics, type Metrics } from "../../../src/metrics/metrics.ts";
import type { PodSnapshot } from "../../../src/model/pod.ts";
import type { Clock } from "../../../src/clock.ts";
import { runKubeletPod } from "../../../src/sim/runtime/cri_kubelet.ts";
import { SimCriRuntime } from "../../../src/sim/runtime/cri_runtime.ts";
import { type CriServer, startCriServer } from "../../../src/sim/runtime/cri_server.ts";
import { CriClient, CriPodSource } from "../../../src/sources/cri/mod.ts";

/** What {@linkcode Harness.start} may change. */
export interface HarnessOptions {
  eventsImplemented?: boolean;
  /** Whether the runtime's events carry statuses. @default {true} */
  eventStatuses?: boolean;
  /** The runtime's clock. */
  clock?: Clock;
  /** The source's clock (the runtime's by default). */
  sourceClock?: Pick<Clock, "now">;
}

/** A simulated runtime served on a temporary socket, with a client and a source. */
export class Harness implements AsyncDisposable {
  readonly runtime: SimCriRuntime;
  readonly metrics: Metrics = createMetrics(new Registry());
  readonly logLines: Record<string, unknown>[] = [];
  readonly log: Logger = createLogger({
    level: "debug",
    write: (line) => this.logLines.push(JSON.parse(line)),
  });
  readonly socketPath: string;
  server!: CriServer;
  readonly client: CriClient;
  readonly source: CriPodSource;
  readonly #dir: string;

  private constructor(dir: string, options: HarnessOptions) {
    this.#dir = dir;
    this.runtime = new SimCriRuntime({
      runtimeName: "containerd",
      clock: options.clock,
      eventStatuses: options.eventStatuses,
    });
    this.socketPath = `${dir}/cri.sock`;
    this.client = new CriClient(`unix://${this.socketPath}`, { requestTimeoutMs: 5000 });
    this.source = new CriPodSource({
      runtime: this.client,
      nodeName: "node-1",
      hostIPs: ["192.168.1.10"],
      callTimeoutMs: 5000,
      metrics: this.metrics,
      log: this.log,
      clock: options.sourceClock ?? options.clock,
    });
  }

  static async start(options: HarnessOptions = {}): Promise<Harness> {
    const h = new Harness(await Deno.makeTempDir({ prefix: "cri-src-" }), options);
    h.server = await startCriServer(h.runtime, {
      socketPath: h.socketPath,
      eventsImplemented: options.eventsImplemented,
    });
    return h;
  }

  async restartServer(): Promise<void> {
    await this.server.close();
    this.server = await startCriServer(this.runtime, {
      socketPath: this.socketPath,
      eventsImplemented: this.server.eventsImplemented,
    });
  }

  list(): Promise<readonly PodSnapshot[]> {
    return this.source.list(AbortSignal.timeout(10_000));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.client.close();
    await this.server.close();
    await Deno.remove(this.#dir, { recursive: true });
  }
}

/** @returns The snapshots by pod UID. */
export function byUid(snapshots: readonly PodSnapshot[]): Map<string, PodSnapshot> {
  return new Map(snapshots.map((s) => [s.uid, s]));
}

/** Runs `n` one-container pods. */
export async function runPods(
  runtime: SimCriRuntime,
  n: number,
): Promise<Awaited<ReturnType<typeof runKubeletPod>>[]> {
  const handles = [];
  for (let i = 0; i < n; i++) {
    handles.push(
      await runKubeletPod(runtime, {
        name: `pod-${i}`,
        uid: `uid-${i}`,
        labels: { app: `a${i}` },
        containers: [{ name: "app", image: "busybox:1" }],
      }),
    );
  }
  return handles;
}
