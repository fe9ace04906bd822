/**
 * Picks the pod sources a configuration asks for: the container runtime
 * (always; simulated with `--simulate`), plus the optional static manifest
 * and kubelet sources.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import type { ServeConfig } from "../config.ts";
import type { Logger } from "../log.ts";
import type { Metrics } from "../metrics/metrics.ts";
import { dirname, join } from "node:path";
import { SimulatedNode, SimulatedPodSource, startSimulatedRuntime } from "../sim/mod.ts";
import {
  CriClient,
  CriPodSource,
  DEFAULT_LIST_CALL_TIMEOUT_MS,
  detectRuntimeEndpoint,
} from "./cri/mod.ts";
import { type PodSource, SourceUnavailableError } from "./mod.ts";
import { closeOptionalSources, createOptionalSources } from "./optional.ts";
import { nodeIPs } from "./node_ips.ts";
import { withFirstSyncDelay } from "./_first_sync_delay.ts";
import { type RuntimeWaitStatus, waitForRuntime } from "./runtime_wait.ts";

/** What {@linkcode createSources} needs. */
export interface CreateSourcesDeps {
  log: Logger;
  clock: Clock;
  metrics: Metrics;
  /** Ends the wait for the runtime (shutdown during start-up). */
  signal?: AbortSignal;
  /** Called while the runtime does not answer yet (see `runtime_wait.ts`). */
  onRuntimeWaiting?: (status: RuntimeWaitStatus) => void;
}

/** The configured sources and what they hold open. */
export interface CreatedSources extends AsyncDisposable {
  readonly sources: readonly PodSource[];
  /** A one-line description of the runtime, for the start-up log. */
  readonly runtime: string;
}

/** Raised when no container runtime answers: `pods-api serve` exits with code 3. */
export class NoRuntimeError extends Error {
  /** The process exit code. */
  readonly exitCode = 3;

  /**
   * @param message What was tried.
   * @param options The underlying cause.
   */
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "NoRuntimeError";
  }
}

async function connectRuntime(
  config: ServeConfig,
  deps: CreateSourcesDeps,
): Promise<{ client: CriClient; runtime: string }> {
  const log = deps.log.child("cri");
  if (config.runtimeEndpoint === "") {
    try {
      const found = await detectRuntimeEndpoint({ log });
      const client = new CriClient(found.endpoint, {
        requestTimeoutMs: config.runtimeRequestTimeoutMs,
      });
      const v = found.version;
      return { client, runtime: `${v.runtimeName} ${v.runtimeVersion} at ${found.endpoint}` };
    } catch (err) {
      if (err instanceof SourceUnavailableError) {
        throw new NoRuntimeError(err.message, { cause: err });
      }
      throw err;
    }
  }
  const client = new CriClient(config.runtimeEndpoint, {
    requestTimeoutMs: config.runtimeRequestTimeoutMs,
  });
  try {
    const v = await client.version(undefined, { timeoutMs: 10_000 });
    return { client, runtime: `${v.runtimeName} ${v.runtimeVersion} at ${config.runtimeEndpoint}` };
  } catch (err) {
    client.close();
    throw new NoRuntimeError(
      `No container runtime answers at "${config.runtimeEndpoint}": ${(err as Error).message}`,
      { cause: err },
    );
  }
}

/**
 * The simulated node served the way a real node is: its pods as a spec
 * source (as the kubelet's `/pods` would give them) and a simulated CRI
 * runtime on a socket beside the API socket, read by the same CRI client
 * and relist code as production.
 */
async function simulatedSources(
  config: ServeConfig,
  deps: CreateSourcesDeps,
  optional: readonly PodSource[],
): Promise<CreatedSources> {
  const node = new SimulatedNode({
    clock: deps.clock,
    nodeName: config.nodeName,
    pods: config.simulatePods,
    churnPerSecond: config.simulateChurn,
    seed: config.simulateSeed,
  });
  const stop = new AbortController();
  // The simulated runtime's socket lives beside the API socket (the one
  // directory the daemon may write to); make it as the server would.
  await Deno.mkdir(dirname(config.socket), { recursive: true, mode: 0o750 });
  const runtime = await startSimulatedRuntime({
    node,
    socketPath: join(dirname(config.socket), "simulated-cri.sock"),
    clock: deps.clock,
    syncPeriodMs: config.relistPeriodMs,
    signal: stop.signal,
    log: deps.log.child("simulated-runtime"),
  });
  const client = new CriClient(runtime.endpoint);
  const cri = new CriPodSource({
    runtime: client,
    nodeName: node.nodeName,
    hostIPs: [node.hostIP],
    runtimeName: "containerd",
    metrics: deps.metrics,
    log: deps.log.child("cri"),
  });
  const spec = withFirstSyncDelay(new SimulatedPodSource({ node, clock: deps.clock }), {
    delayMs: config.simulateSyncDelayMs,
    clock: deps.clock,
  });
  return {
    sources: [cri, spec, ...optional],
    runtime:
      `simulated node (${config.simulatePods} pods, ${config.simulateChurn} changes/s) behind a simulated CRI runtime at ${runtime.endpoint}`,
    async [Symbol.asyncDispose]() {
      closeOptionalSources(optional);
      client.close();
      stop.abort();
      await runtime.close();
    },
  };
}

/**
 * Builds the configured sources.
 *
 * @param config The effective configuration.
 * @param deps Log, clock and metrics.
 * @returns The sources (runtime first) and their cleanup.
 * @throws {NoRuntimeError} When no container runtime answers the Version handshake
 *   within `--runtime-wait-timeout`.
 */
export async function createSources(
  config: ServeConfig,
  deps: CreateSourcesDeps,
): Promise<CreatedSources> {
  const optional = createOptionalSources({
    nodeName: config.nodeName,
    podManifestPath: config.podManifestPath,
    fileCheckFrequencyMs: config.fileCheckFrequencyMs,
    kubeletUrl: config.kubeletUrl,
    ...(config.kubeletTokenFile === "" ? {} : { kubeletTokenFile: config.kubeletTokenFile }),
    kubeletClientCert: config.kubeletClientCert,
    kubeletClientKey: config.kubeletClientKey,
    kubeletCaFile: config.kubeletCaFile,
    kubeletInsecureSkipTlsVerify: config.kubeletInsecureSkipTlsVerify,
    kubeletPollPeriodMs: config.kubeletPollPeriodMs,
  }, deps);
  if (config.simulate) return await simulatedSources(config, deps, optional);
  let connected;
  try {
    connected = await waitForRuntime(
      () => connectRuntime(config, deps),
      (err) => err instanceof NoRuntimeError,
      {
        limitMs: config.runtimeWaitTimeoutMs,
        clock: deps.clock,
        log: deps.log.child("cri"),
        ...(deps.signal ? { signal: deps.signal } : {}),
        ...(deps.onRuntimeWaiting ? { onWaiting: deps.onRuntimeWaiting } : {}),
      },
    );
  } catch (err) {
    closeOptionalSources(optional);
    throw err;
  }
  const { client, runtime } = connected;
  const cri = new CriPodSource({
    runtime: client,
    nodeName: config.nodeName,
    hostIPs: nodeIPs(config.nodeIPs),
    runtimeName: runtime.split(" ")[0] ?? "containerd",
    callTimeoutMs: Math.min(config.runtimeRequestTimeoutMs, DEFAULT_LIST_CALL_TIMEOUT_MS),
    metrics: deps.metrics,
    log: deps.log.child("cri"),
  });
  return {
    sources: [cri, ...optional],
    runtime,
    [Symbol.asyncDispose]() {
      closeOptionalSources(optional);
      client.close();
      return Promise.resolve();
    },
  };
}
