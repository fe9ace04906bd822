/**
 * Picks the pod sources a configuration asks for: the container runtime
 * (always), the kubelet's own Pods API (unless `--kubelet-pods-api-endpoint
 * none`), plus the optional static manifest and kubelet `/pods` sources. With
 * `--simulate`, `main.ts` asks the simulator (`src/sim/`) instead.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import type { ServeConfig } from "../config.ts";
import type { Logger } from "../log.ts";
import type { Metrics } from "../metrics/metrics.ts";
import {
  containerIdScheme,
  CriClient,
  CriPodSource,
  DEFAULT_LIST_CALL_TIMEOUT_MS,
  detectRuntimeEndpoint,
  parseRuntimeEndpoint,
  runtimeSocketAccessError,
  socketDenial,
  type VersionResponse,
} from "./cri/mod.ts";
import { type PodSource, SourceUnavailableError } from "./mod.ts";
import { KubeletPodsApiSource, type SocketIdentity } from "./kubelet_podsapi/mod.ts";
import { closeOptionalSources, createOptionalSources } from "./optional.ts";
import { nodeIPs } from "./node_ips.ts";
import type { ProcFs } from "./process/mod.ts";
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
  /** Whether a socket is the daemon's own (its compatibility socket on the kubelet's path). */
  isOwnSocket?: (identity: SocketIdentity) => boolean;
}

/** The configured sources and what they hold open. */
export interface CreatedSources extends AsyncDisposable {
  readonly sources: readonly PodSource[];
  /** What each source is, for the start-up log (its kind, unless that would mislead). */
  readonly names: readonly string[];
  /** A one-line description of the runtime, for the start-up log. */
  readonly runtime: string;
  /** Where process lookups read `/proc` and the cgroup tree, when not the host's (a simulated node). */
  readonly procFs?: ProcFs;
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

/**
 * The runtime as its Version names it: the container ID scheme and the
 * start-up log's description (a runtime that gives no name is not guessed).
 */
function described(
  version: Pick<VersionResponse, "runtimeName" | "runtimeVersion">,
  endpoint: string,
): { runtime: string; runtimeName: string } {
  const runtimeName = containerIdScheme(version.runtimeName);
  return { runtimeName, runtime: `${runtimeName} ${version.runtimeVersion} at ${endpoint}` };
}

async function connectRuntime(
  config: ServeConfig,
  deps: CreateSourcesDeps,
): Promise<{ client: CriClient; runtime: string; runtimeName: string }> {
  const log = deps.log.child("cri");
  if (config.runtimeEndpoint === "") {
    try {
      const found = await detectRuntimeEndpoint({ log });
      const client = new CriClient(found.endpoint, {
        requestTimeoutMs: config.runtimeRequestTimeoutMs,
      });
      return { client, ...described(found.version, found.endpoint) };
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
    return { client, ...described(v, config.runtimeEndpoint) };
  } catch (err) {
    client.close();
    const denial = socketDenial(err);
    if (denial !== undefined) {
      throw runtimeSocketAccessError(parseRuntimeEndpoint(config.runtimeEndpoint).path, denial);
    }
    throw new NoRuntimeError(
      `No container runtime answers at "${config.runtimeEndpoint}": ${(err as Error).message}`,
      { cause: err },
    );
  }
}

/**
 * The optional sources (static manifests, the local kubelet, the API
 * server) the configuration asks for.
 *
 * @param config The effective configuration.
 * @param deps Log, clock and metrics.
 * @returns The sources; empty when neither is configured.
 */
export function configuredOptionalSources(
  config: ServeConfig,
  deps: CreateSourcesDeps,
): PodSource[] {
  return createOptionalSources({
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
    apiserver: config.apiserver,
    apiserverKubeconfig: config.apiserverKubeconfig,
  }, deps);
}

/**
 * Builds the configured sources.
 *
 * @param config The effective configuration.
 * @param deps Log, clock and metrics.
 * @returns The sources (runtime first) and their cleanup.
 * @throws {NoRuntimeError} When no container runtime answers the Version handshake
 *   within `--runtime-wait-timeout`.
 * @throws {RuntimeSocketAccessError} At once, when the runtime socket may not be
 *   opened (Deno permissions or the system's): waiting cannot grant that.
 * @throws {TypeError} For a `--simulate` configuration (see `src/sim/`).
 */
export async function createSources(
  config: ServeConfig,
  deps: CreateSourcesDeps,
): Promise<CreatedSources> {
  if (config.simulate) {
    throw new TypeError(
      "Cannot create the sources of --simulate here: main.ts wires the simulator",
    );
  }
  const optional = configuredOptionalSources(config, deps);
  const endpoint = config.kubeletPodsApiEndpoint;
  if (endpoint !== "" && endpoint !== "none") {
    optional.unshift(
      new KubeletPodsApiSource({
        endpoint,
        log: deps.log.child("kubelet-podsapi"),
        metrics: deps.metrics,
        ...(deps.isOwnSocket ? { isOwnSocket: deps.isOwnSocket } : {}),
      }),
    );
  }
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
  const { client, runtime, runtimeName } = connected;
  const cri = new CriPodSource({
    runtime: client,
    nodeName: config.nodeName,
    hostIPs: nodeIPs(config.nodeIPs),
    runtimeName,
    callTimeoutMs: Math.min(config.runtimeRequestTimeoutMs, DEFAULT_LIST_CALL_TIMEOUT_MS),
    metrics: deps.metrics,
    log: deps.log.child("cri"),
  });
  const sources = [cri, ...optional];
  return {
    sources,
    names: sources.map((s) => s.kind),
    runtime,
    [Symbol.asyncDispose]() {
      closeOptionalSources(optional);
      client.close();
      return Promise.resolve();
    },
  };
}
