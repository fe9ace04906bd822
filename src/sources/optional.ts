/**
 * The optional pod sources (static manifests, the local kubelet, the API
 * server) built from plain configuration values, for the daemon's
 * composition root. Without `podManifestPath`, `kubeletUrl`, `apiserver` or
 * `apiserverKubeconfig` nothing is built.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import type { Logger } from "../log.ts";
import type { Metrics } from "../metrics/metrics.ts";
import { KubeletPodSource } from "./kubelet/mod.ts";
import {
  apiServerConnectionOf,
  ApiServerPodSource,
  type ApiServerSourceMetrics,
} from "./apiserver/mod.ts";
import type { PodSource, PolledSource } from "./mod.ts";
import { StaticPodSource } from "./static/mod.ts";

/** Configuration of the optional sources (the `serve` flags in brackets). */
export interface OptionalSourcesOptions {
  /** `spec.nodeName` and the static pod name suffix (`--hostname-override`). */
  nodeName: string;
  /** Static pod manifest directory or file; `""`: none (`--pod-manifest-path`). */
  podManifestPath?: string;
  /** Rescan period of the manifests, ms (`--file-check-frequency`). @default {DEFAULT_RESCAN_MS} */
  fileCheckFrequencyMs?: number;
  /** Kubelet base URL; `""`: none (`--kubelet-url`). */
  kubeletUrl?: string;
  /** Bearer token file; `undefined`: the service account token if present (`--kubelet-token-file`). */
  kubeletTokenFile?: string;
  /** `--kubelet-client-cert`. */
  kubeletClientCert?: string;
  /** `--kubelet-client-key`. */
  kubeletClientKey?: string;
  /** `--kubelet-ca-file`. */
  kubeletCaFile?: string;
  /** `--kubelet-insecure-skip-tls-verify`. */
  kubeletInsecureSkipTlsVerify?: boolean;
  /** `/pods` poll period, ms (`--kubelet-poll-period`). @default {DEFAULT_KUBELET_POLL_MS} */
  kubeletPollPeriodMs?: number;
  /** `in-cluster`, an API server URL, or `""` (`--apiserver`). */
  apiserver?: string;
  /** Kubeconfig of the API server source; `""`: none (`--apiserver-kubeconfig`). */
  apiserverKubeconfig?: string;
}

/** What the optional sources need besides their configuration. */
export interface OptionalSourcesDeps {
  clock: Clock;
  log: Logger;
  metrics?: Pick<Metrics, "sourceItemsRejected"> & ApiServerSourceMetrics;
}

/**
 * Builds the configured optional sources: a {@linkcode StaticPodSource} when
 * a manifest path is set, a {@linkcode KubeletPodSource} when a kubelet URL
 * is set, an {@linkcode ApiServerPodSource} when `apiserver` or
 * `apiserverKubeconfig` is.
 *
 * @example Usage
 * ```ts
 * import { createOptionalSources } from "./optional.ts";
 * import { silentLogger } from "../log.ts";
 * import { systemClock } from "../clock.ts";
 * const sources = createOptionalSources(
 *   { nodeName: "node-1", podManifestPath: "/etc/kubernetes/manifests" },
 *   { clock: systemClock, log: silentLogger },
 * );
 * console.assert(sources.length === 1 && sources[0]!.kind === "static");
 * ```
 *
 * @param options Configuration values.
 * @param deps Clock, log and metrics.
 * @returns The sources, static first; empty when none is configured.
 * @throws {TypeError} When a value is invalid (bad URL, certificate without key,
 *   an unreadable kubeconfig, `in-cluster` outside a pod).
 * @throws {RangeError} When a period or timeout is not positive.
 */
export function createOptionalSources(
  options: OptionalSourcesOptions,
  deps: OptionalSourcesDeps,
): PodSource[] {
  const sources: PodSource[] = [];
  if (options.podManifestPath) {
    sources.push(
      new StaticPodSource({
        dir: options.podManifestPath,
        nodeName: options.nodeName,
        clock: deps.clock,
        log: deps.log.child("static-source"),
        ...(deps.metrics ? { metrics: deps.metrics } : {}),
        ...(options.fileCheckFrequencyMs ? { rescanMs: options.fileCheckFrequencyMs } : {}),
      }),
    );
  }
  if (options.kubeletUrl) {
    const kubelet: ConstructorParameters<typeof KubeletPodSource>[0] = {
      url: options.kubeletUrl,
      log: deps.log.child("kubelet-source"),
      insecureSkipTlsVerify: options.kubeletInsecureSkipTlsVerify ?? false,
    };
    if (deps.metrics) kubelet.metrics = deps.metrics;
    if (options.kubeletTokenFile !== undefined) kubelet.tokenFile = options.kubeletTokenFile;
    if (options.kubeletClientCert) kubelet.clientCertFile = options.kubeletClientCert;
    if (options.kubeletClientKey) kubelet.clientKeyFile = options.kubeletClientKey;
    if (options.kubeletCaFile) kubelet.caFile = options.kubeletCaFile;
    if (options.kubeletPollPeriodMs) kubelet.pollPeriodMs = options.kubeletPollPeriodMs;
    sources.push(new KubeletPodSource(kubelet));
  }
  const connection = apiServerConnectionOf(
    options.apiserver ?? "",
    options.apiserverKubeconfig ?? "",
  );
  if (connection !== undefined) {
    sources.push(
      new ApiServerPodSource({
        connection,
        nodeName: options.nodeName,
        clock: deps.clock,
        log: deps.log.child("apiserver-source"),
        ...(deps.metrics ? { metrics: deps.metrics } : {}),
      }),
    );
  }
  return sources;
}

/**
 * The relist period of a source: its own {@linkcode PolledSource.periodMs},
 * else the daemon's.
 *
 * @param source A source.
 * @param fallbackMs The daemon's relist period (`--relist-period`).
 * @returns The period in ms.
 */
export function relistPeriodOf(source: PolledSource, fallbackMs: number): number {
  const own = source.periodMs;
  return typeof own === "number" && own > 0 ? own : fallbackMs;
}

/**
 * Releases what the sources hold (the kubelet source's HTTP client).
 *
 * @param sources The daemon's sources.
 */
export function closeOptionalSources(sources: readonly PodSource[]): void {
  for (const s of sources) s.close?.();
}
