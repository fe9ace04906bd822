/**
 * An {@linkcode ApiServerPodSource} on a fake API server, with its retry
 * waits held until the test lets them pass (so no test waits on a timer)
 * and the silent-watch deadline fired by the test.
 *
 * @module
 */

import { FakeClock } from "../../../src/clock.ts";
import { silentLogger } from "../../../src/log.ts";
import { createMetricsRegistry, type MetricsRegistry } from "../../../src/metrics/registry.ts";
import type { PodSnapshot } from "../../../src/model/pod.ts";
import {
  type ApiServerConnection,
  ApiServerPodSource,
  type ApiServerPodSourceOptions,
} from "../../../src/sources/apiserver/mod.ts";
import { poll } from "../../_support/poll.ts";
import { ViewRecorder } from "../../_support/view_recorder.ts";

/** The source under test and its controls. */
export interface SourceHarness extends AsyncDisposable {
  readonly source: ApiServerPodSource;
  readonly registry: MetricsRegistry;
  /** Every retry wait asked for, ms, in order. */
  readonly retryWaits: number[];
  /** Lets the pending retry waits end. */
  releaseRetries(): void;
  /** Ends the open watch as if it had been silent past its deadline. */
  fireWatchDeadline(): void;
  /** The last view the source pushed, once it has said anything; throws its last failure. */
  list(): Promise<readonly PodSnapshot[]>;
  /** Polls the view until `check` holds. */
  until(check: (pods: readonly PodSnapshot[]) => boolean, what: string): Promise<void>;
  /** Polls until the source says it failed, and returns why. */
  failure(): Promise<Error>;
}

/** The watch's deadline is the only long wait the source asks for. */
const DEADLINE_AT_LEAST_MS = 60_000;

/**
 * Builds the source.
 *
 * @param connection Server and credentials.
 * @param options More source options.
 * @returns The harness; dispose it to stop the source.
 */
export function sourceOn(
  connection: Omit<ApiServerConnection, "origin"> & { origin?: string },
  options: Partial<ApiServerPodSourceOptions> = {},
): SourceHarness {
  const registry = createMetricsRegistry();
  const retryWaits: number[] = [];
  let retries = new Set<() => void>();
  let deadlines = new Set<() => void>();
  const held = (set: Set<() => void>, signal: AbortSignal) =>
    new Promise<void>((resolve) => {
      const done = () => {
        set.delete(done);
        resolve();
      };
      set.add(done);
      signal.addEventListener("abort", done, { once: true });
    });
  const source = new ApiServerPodSource({
    connection: { origin: "test", ...connection },
    nodeName: "node-1",
    clock: new FakeClock(),
    log: silentLogger,
    metrics: registry.metrics,
    random: () => 0,
    sleep: (ms, signal) => {
      if (ms >= DEADLINE_AT_LEAST_MS) return held(deadlines, signal);
      retryWaits.push(ms);
      return held(retries, signal);
    },
    ...options,
  });
  const recorder = new ViewRecorder();
  const stop = new AbortController();
  const running = source.run(recorder, stop.signal);
  const read = () => recorder.latest();
  return {
    source,
    registry,
    retryWaits,
    releaseRetries() {
      const pending = retries;
      retries = new Set();
      for (const done of pending) done();
    },
    fireWatchDeadline() {
      const pending = deadlines;
      deadlines = new Set();
      for (const done of pending) done();
    },
    list: read,
    async until(check, what) {
      await poll(async () => {
        try {
          return check(await read()) ? true : undefined;
        } catch {
          return undefined;
        }
      }, { what });
    },
    failure() {
      return poll(async () => {
        try {
          await read();
          return undefined;
        } catch (error) {
          return error as Error;
        }
      }, { what: "the source to fail" });
    },
    async [Symbol.asyncDispose]() {
      stop.abort();
      await running;
      await source.stop();
    },
  };
}
