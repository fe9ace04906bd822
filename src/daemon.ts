/**
 * Composition of the daemon: source → relister → cache → hub → handlers →
 * gRPC server, plus the metrics endpoint. `main.ts` and the end-to-end tests
 * both start it from here.
 *
 * @module
 */

import { PodCache } from "./cache/mod.ts";
import { PodMerger, releaseBestEffortSources } from "./merge/mod.ts";
import { CriPodSource } from "./sources/cri/mod.ts";
import { relistPeriodOf, watchOptionalSources } from "./sources/optional.ts";
import type { Clock } from "./clock.ts";
import type { ServeConfig } from "./config.ts";
import { EventHub } from "./events/mod.ts";
import { FieldMaskCache } from "./fieldmask/mod.ts";
import type { Logger } from "./log.ts";
import { serveMetrics } from "./metrics/http.ts";
import { createMetricsRegistry, type MetricsRegistry } from "./metrics/registry.ts";
import { encodePod, POD_SCHEMA } from "./proto/mod.ts";
import { TokenBucket } from "./ratelimit/mod.ts";
import { Relister, SyncGate } from "./relist/mod.ts";
import { startGrpcServer } from "./server/grpc_server.ts";
import { PodsService } from "./server/pods_service.ts";
import { PodQueryService } from "./server/pod_query_service.ts";
import { QueryEngine } from "./query/mod.ts";
import { UnrepresentableCounter } from "./pipeline/unrepresentable_counter.ts";
import { type RunningKubeApi, serveKubeApi } from "./kubeapi/mod.ts";
import type { PodSource } from "./sources/mod.ts";

/** Longest time one read of a source may take. */
const RELIST_TIMEOUT_MS = 30_000;

/** What the daemon is built from, besides its configuration. */
export interface DaemonDeps {
  log: Logger;
  clock: Clock;
  /** The pod sources to serve (the caller picks them from the configuration). */
  sources: readonly PodSource[];
  /** A registry to use; a new one with process metrics by default. */
  registry?: MetricsRegistry;
  /** Start the relist loops. Tests turn this off and call `relistOnce()`. @default {true} */
  runLoops?: boolean;
}

/** A running daemon. */
export interface RunningDaemon extends AsyncDisposable {
  readonly socketPath: string;
  readonly metricsPort: number;
  /** The HTTP API's port and scheme, when `--http-bind-address` is set. */
  readonly httpApi: { readonly port: number; readonly scheme: string } | undefined;
  readonly registry: MetricsRegistry;
  readonly cache: PodCache;
  /** Selections, lookups, history and tombstones over the cache. */
  readonly query: QueryEngine;
  readonly gate: SyncGate;
  /** Relists every source once, now. @returns Whether every source succeeded. */
  relistOnce(): Promise<boolean>;
  /** Stops: watches end with UNAVAILABLE, the socket is removed. */
  close(): Promise<void>;
}

/**
 * Why the daemon is not ready: the gate's reasons (a source that never
 * synced, or that has been silent too long), each failing source's last
 * error appended so `/readyz` says why, not only which.
 */
function readinessReasons(gate: SyncGate, relisters: readonly Relister[]): string[] {
  const reasons = [...gate.notReadyReasons()];
  if (reasons.length === 0) return reasons;
  for (const r of relisters) {
    if (r.consecutiveFailures === 0 || r.lastError === undefined) continue;
    const error = r.lastError instanceof Error ? r.lastError.message : String(r.lastError);
    reasons.push(`source "${r.name}" failed ${r.consecutiveFailures} time(s) in a row: ${error}`);
  }
  return reasons;
}

/**
 * Starts the daemon.
 *
 * @param config The effective configuration.
 * @param deps Log, clock, sources, registry.
 * @returns The running daemon.
 * @throws {Error} When the socket or the metrics address cannot be bound.
 */
export async function startDaemon(config: ServeConfig, deps: DaemonDeps): Promise<RunningDaemon> {
  const { log, clock, sources } = deps;
  const registry = deps.registry ?? createMetricsRegistry({ processMetrics: true });
  const { metrics } = registry;
  const shutdown = new AbortController();
  const cache = new PodCache({ encode: encodePod, clock, metrics });
  const hub = new EventHub({ store: cache, metrics });
  const query = new QueryEngine({
    store: cache,
    hub,
    clock,
    history: { maxAgeMs: config.watchHistoryMs, maxEvents: config.watchHistoryEvents },
    tombstoneTtlMs: config.tombstoneTtlMs,
  });
  const gate = new SyncGate({
    sources: sources.map((s) => s.kind),
    clock,
    staleAfter: config.relistThresholdMs,
  });
  const merger = new PodMerger();
  const unrepresentable = new UnrepresentableCounter({ metrics, log: log.child("sources") });
  const relisters = sources.map((source) =>
    new Relister({
      source,
      sink: (snapshots) => {
        unrepresentable.check(source.kind, snapshots);
        const events = cache.apply(merger.update(source.kind, snapshots));
        // The query engine's log and indexes first: a watcher woken by the
        // hub may resume from, or look up, what it was just told.
        query.apply(events);
        hub.publish(events);
        gate.markSynced(source.kind);
      },
      clock,
      metrics,
      log: log.child(`relist-${source.kind}`),
      period: relistPeriodOf(source, config.relistPeriodMs),
      timeout: Math.min(config.runtimeRequestTimeoutMs, RELIST_TIMEOUT_MS),
    })
  );
  const limiter = new TokenBucket({
    qps: config.rateLimitQps,
    burst: config.rateLimitBurst,
    clock,
  });
  const masks = new FieldMaskCache(POD_SCHEMA);
  const connectionLimit = {
    qps: config.connectionRateLimitQps,
    burst: config.connectionRateLimitBurst,
  };
  const service = new PodsService({
    store: cache,
    hub,
    gate,
    limiter,
    masks,
    encode: encodePod,
    metrics,
    watchQueueLimit: config.watchQueueSize,
    maxWatchers: config.maxWatchers,
    shutdown: shutdown.signal,
  });
  const queryService = new PodQueryService({
    engine: query,
    gate,
    limiter,
    connectionLimit,
    clock,
    masks,
    encode: encodePod,
    metrics,
    watchQueueLimit: config.watchQueueSize,
    maxWatchers: config.maxWatchers,
    shutdown: shutdown.signal,
  });
  const grpc = await startGrpcServer(
    { socketPath: config.socket, socketGroup: config.socketGroup },
    { service, query: queryService, metrics, log: log.child("grpc") },
  );
  let httpApi: RunningKubeApi | undefined;
  if (config.httpBind !== undefined) {
    try {
      httpApi = await serveKubeApi({
        hostname: config.httpBind.host,
        port: config.httpBind.port,
        tokenFile: config.httpTokenFile,
        tlsCertFile: config.httpTlsCertFile,
        tlsKeyFile: config.httpTlsKeyFile,
        bookmarkPeriodMs: config.httpBookmarkPeriodMs,
      }, {
        engine: query,
        gate,
        limiter,
        connectionLimit,
        clock,
        metrics,
        log: log.child("http-api"),
        shutdown: shutdown.signal,
        watchQueueLimit: config.watchQueueSize,
      });
    } catch (err) {
      await grpc.close(0);
      throw err;
    }
  }
  let http;
  try {
    http = await serveMetrics(
      { hostname: config.metricsHost, port: config.metricsPort },
      {
        registry,
        readiness: {
          notReadyReasons: () => readinessReasons(gate, relisters),
          degradedReasons: () => gate.degradedReasons(),
        },
        log: log.child("http"),
      },
    );
  } catch (err) {
    await grpc.close(0);
    await httpApi?.close();
    throw err;
  }
  const loops: Promise<unknown>[] = [];
  if (deps.runLoops !== false) {
    const { signal } = shutdown;
    const died = (err: unknown) => log.error("background loop died", { error: err });
    for (const r of relisters) loops.push(r.run(signal).catch(died));
    // The gate opening is when clients start getting pods: worth one log line.
    loops.push(
      gate.waitOpen(signal).then(
        () => log.info("sync gate open: serving pods", { pods: cache.list().length }),
        () => {},
      ),
    );
    const relistOf = (source: PodSource) => relisters[sources.indexOf(source)]!;
    loops.push(
      ...watchOptionalSources(sources, signal, (s) => void relistOf(s).relistOnce(signal)),
    );
    for (const source of sources) {
      if (source instanceof CriPodSource) {
        loops.push(
          source.watchHints(signal, () => void relistOf(source).relistOnce(signal)).catch(died),
        );
      }
    }
    if (config.bestEffortSources.length > 0) {
      loops.push(
        releaseBestEffortSources(gate, signal, {
          sources: config.bestEffortSources,
          timeoutMs: config.bestEffortTimeoutMs,
          log: log.child("gate"),
        }).catch(died),
      );
    }
  }
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      shutdown.abort();
      hub.close();
      await grpc.close(2000);
      await httpApi?.close();
      await http.close();
      await Promise.all(loops);
    })();
    return closing;
  };
  return {
    socketPath: grpc.socketPath,
    metricsPort: http.port,
    httpApi: httpApi === undefined ? undefined : { port: httpApi.port, scheme: httpApi.scheme },
    registry,
    cache,
    query,
    gate,
    async relistOnce() {
      const results = await Promise.all(relisters.map((r) => r.relistOnce(shutdown.signal)));
      return results.every(Boolean);
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}
