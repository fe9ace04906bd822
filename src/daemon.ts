/**
 * Composition of the daemon: it only constructs and starts things. Each
 * source hands its views to its feed (a watched source directly, a polled
 * one through its relister), which feeds the {@linkcode PodPipeline} (merge ->
 * cache -> query engine -> hub -> gate); the handlers read the pipeline; the
 * gRPC server, the optional Kubernetes HTTP API and the metrics endpoint
 * serve them. `main.ts` and the end-to-end tests both start it from here.
 *
 * @module
 */

import type { PodCache } from "./cache/mod.ts";
import type { PodSnapshot } from "./model/pod.ts";
import { clockSleep } from "./sleep.ts";
import { relistPeriodOf } from "./sources/optional.ts";
import type { Clock } from "./clock.ts";
import { listenError, type ServeConfig } from "./config.ts";
import { FieldMaskCache } from "./fieldmask/mod.ts";
import type { Logger } from "./log.ts";
import { serveMetrics } from "./metrics/http.ts";
import { createMetricsRegistry, type MetricsRegistry } from "./metrics/registry.ts";
import type { Metrics } from "./metrics/metrics.ts";
import { encodePod, POD_SCHEMA } from "./proto/mod.ts";
import { TokenBucket } from "./ratelimit/mod.ts";
import {
  readinessReasons,
  releaseBestEffortSources,
  Relister,
  SourceFeed,
  type SyncGate,
  Watcher,
} from "./relist/mod.ts";
import { startGrpcServer } from "./server/grpc_server.ts";
import { PodsService } from "./server/pods_service.ts";
import { PodQueryService } from "./server/pod_query_service.ts";
import type { QueryEngine } from "./query/mod.ts";
import { ServingCore } from "./serving/mod.ts";
import { PodPipeline } from "./pipeline/mod.ts";
import { type RunningKubeApi, serveKubeApi } from "./kubeapi/mod.ts";
import { containerProcessSourceOf, isWatched, type PodSource } from "./sources/mod.ts";
import { traitsOf } from "./model/pod_source_kind.ts";
import { cgroupRootsAt, ProcessIndex, type ProcFs } from "./sources/process/mod.ts";
import type { OwnSockets } from "./server/unix_socket.ts";
import {
  DEFAULT_POD_RESOURCES_ENDPOINT,
  PodResourcesClient,
  PodResourcesPoller,
  type PollResult,
} from "./sources/podresources/mod.ts";

/** Longest time one read of a source may take. */
const RELIST_TIMEOUT_MS = 30_000;
/**
 * The longest a new pod seen only by the runtime waits for the kubelet's (or
 * the simulated node's) view before it is announced without its spec, ms.
 */
const NEW_POD_HOLD_MS = 2_000;

/** Connections the HTTP API holds besides one per watch: lists, gets, discovery, probes. */
const HTTP_HEADROOM = 64;

/**
 * The HTTP API's connection cap: `--http-max-connections`, else one per
 * watch slot plus headroom. With the defaults, the API socket (1024), the
 * compatibility socket (1024), the HTTP API (1064) and the metrics port (64)
 * hold at most 3176 descriptors together, well inside the unit's
 * `LimitNOFILE=8192`, so a flood of any listener leaves the others, the
 * sources and the runtime's connection their descriptors.
 */
function httpMaxConnections(config: ServeConfig): number {
  return config.httpMaxConnections > 0
    ? config.httpMaxConnections
    : config.maxWatchers + HTTP_HEADROOM;
}

/** `host:port`, with brackets around an IPv6 host. */
function hostPort(address: { host: string; port: number }): string {
  return address.host.includes(":")
    ? `[${address.host}]:${address.port}`
    : `${address.host}:${address.port}`;
}

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
  /** Where the sockets the daemon binds are recorded (the kubelet Pods API source reads it). */
  ownSockets?: OwnSockets;
  /** Where process lookups read `/proc` and the cgroup tree. @default {hostProcFs} */
  procFs?: ProcFs;
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
  /**
   * Relists every source once, after any relist of it in progress (never
   * beside it). @returns Whether every source succeeded.
   */
  relistOnce(): Promise<boolean>;
  /**
   * Polls the kubelet's podresources API once, now.
   * @returns What happened, or `undefined` when `--pod-resources-endpoint` is `none`.
   */
  pollPodResources(): Promise<PollResult | undefined>;
  /** Stops: watches end with UNAVAILABLE, the socket is removed. */
  close(): Promise<void>;
}

/**
 * Starts the daemon.
 *
 * @param config The effective configuration.
 * @param deps Log, clock, sources, registry.
 * @returns The running daemon.
 * @throws {Error} When the socket or an address cannot be bound, naming the address and its flag.
 */
export async function startDaemon(config: ServeConfig, deps: DaemonDeps): Promise<RunningDaemon> {
  const { log, clock, sources } = deps;
  const registry = deps.registry ?? createMetricsRegistry({ processMetrics: true });
  const { metrics } = registry;
  const shutdown = new AbortController();
  const pipeline = new PodPipeline({
    sources: sources.map((s) => s.kind),
    encode: encodePod,
    clock,
    metrics,
    log: log.child("pipeline"),
    history: {
      maxAgeMs: config.watchHistoryMs,
      maxEvents: config.watchHistoryEvents,
      maxBytes: config.watchHistoryBytes,
    },
    tombstoneTtlMs: config.tombstoneTtlMs,
    tombstoneMaxBytes: config.tombstoneBytes,
    staleAfterMs: config.relistThresholdMs,
    newPodHoldMs: NEW_POD_HOLD_MS,
    // A new pod waits for the spec sources' views: a polled one is read soon,
    // not at its next period (a watched one hands changes on as they come).
    onNewPodWait: (kinds) => {
      sources.forEach((s, i) => {
        if (kinds.includes(s.kind)) runners[i]!.requestRelist();
      });
    },
  });
  const { cache, query, gate } = pipeline;
  const runners = sources.map((source): Relister | Watcher => {
    const sourceLog = log.child(`relist-${source.kind}`);
    const sink = (snapshots: readonly PodSnapshot[], held = false) =>
      pipeline.apply(source.kind, snapshots, held);
    if (isWatched(source)) {
      const feed = new SourceFeed({
        name: source.kind,
        sink,
        gate,
        clock,
        metrics,
        log: sourceLog,
        watched: true,
      });
      return new Watcher(source, feed, {
        periodMs: config.relistPeriodMs,
        sleep: clockSleep(clock),
      });
    }
    return new Relister({
      source,
      sink,
      gate,
      clock,
      metrics,
      log: sourceLog,
      period: relistPeriodOf(source, config.relistPeriodMs),
      minInterval: config.relistMinIntervalMs,
      timeout: Math.min(config.runtimeRequestTimeoutMs, RELIST_TIMEOUT_MS),
    });
  });
  const feeds = runners.map((r) => r.feed);
  const podResources = startPodResources(config, deps, pipeline, metrics);
  const limiter = new TokenBucket({
    qps: config.rateLimitQps,
    burst: config.rateLimitBurst,
    clock,
  });
  const masks = new FieldMaskCache(POD_SCHEMA);
  // One core admits the calls of every surface: one rate limit, one sync
  // gate, one pool of --max-watchers watch slots.
  const core = new ServingCore({
    engine: query,
    gate,
    limiter,
    connectionLimit: {
      qps: config.connectionRateLimitQps,
      burst: config.connectionRateLimitBurst,
    },
    clock,
    metrics,
    shutdown: shutdown.signal,
    maxWatchers: config.maxWatchers,
    watchQueueLimit: config.watchQueueSize,
  });
  const service = new PodsService({ core, masks, encode: encodePod });
  const processSource = containerProcessSourceOf(sources);
  const queryService = new PodQueryService({
    core,
    masks,
    encode: encodePod,
    ...(podResources === undefined ? {} : { devices: pipeline.devices }),
    ...(processSource === undefined ? {} : {
      processes: new ProcessIndex(processSource, {
        ...(deps.procFs === undefined ? {} : { fs: deps.procFs }),
        procRoot: config.hostProc,
        cgroupRoots: cgroupRootsAt(config.hostCgroupRoot),
        metrics,
      }),
    }),
  });
  const grpc = await startGrpcServer(
    {
      socketPath: config.socket,
      socketGroup: config.socketGroup,
      compatSocketPath: config.kubeletCompatSocket,
      ...(deps.ownSockets === undefined ? {} : { ownSockets: deps.ownSockets }),
    },
    { service, query: queryService, metrics, log: log.child("grpc"), clock },
  ).catch((err) => {
    throw listenError(err, "socket", config.socket);
  });
  const timeouts = {
    tlsHandshakeMs: config.httpTlsHandshakeTimeoutMs,
    readHeaderMs: config.httpReadHeaderTimeoutMs,
    idleMs: config.httpIdleTimeoutMs,
    writeMs: config.httpWriteTimeoutMs,
  };
  let httpApi: RunningKubeApi | undefined;
  if (config.httpBind !== undefined) {
    try {
      httpApi = await serveKubeApi({
        hostname: config.httpBind.host,
        port: config.httpBind.port,
        tokenFile: config.httpTokenFile,
        tlsCertFile: config.httpTlsCertFile,
        tlsKeyFile: config.httpTlsKeyFile,
        certDir: config.httpCertDir,
        certHosts: [config.nodeName, ...config.nodeIPs],
        bookmarkPeriodMs: config.httpBookmarkPeriodMs,
        maxConnections: httpMaxConnections(config),
        timeouts,
      }, { core, metrics, log: log.child("http-api") });
    } catch (err) {
      await grpc.close(0);
      throw listenError(err, "http-bind-address", hostPort(config.httpBind));
    }
  }
  let http;
  try {
    http = await serveMetrics(
      {
        hostname: config.metricsHost,
        port: config.metricsPort,
        maxConnections: config.metricsMaxConnections,
        timeouts,
      },
      {
        registry,
        readiness: {
          notReadyReasons: () => readinessReasons(gate, feeds),
          degradedReasons: () => [
            ...gate.degradedReasons(),
            ...sources.flatMap((s, i) =>
              traitsOf(s.kind).canDegrade ? feeds[i]!.heldBecause ?? [] : []
            ),
          ],
        },
        log: log.child("http"),
      },
    );
  } catch (err) {
    await grpc.close(0);
    await httpApi?.close();
    throw listenError(
      err,
      "metrics-bind-address",
      hostPort({ host: config.metricsHost, port: config.metricsPort }),
    );
  }
  const loops: Promise<unknown>[] = [];
  if (deps.runLoops !== false) {
    const { signal } = shutdown;
    const died = (err: unknown) => log.error("background loop died", { error: err });
    // Each source's loop; a polled source's also watches its changes.
    for (const r of runners) loops.push(r.run(signal).catch(died));
    if (podResources !== undefined) loops.push(podResources.poller.run(signal).catch(died));
    // The gate opening is when clients start getting pods: worth one log line.
    loops.push(
      gate.waitOpen(signal).then(
        () => log.info("sync gate open: serving pods", { pods: cache.list().length }),
        () => {},
      ),
    );
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
      pipeline.close();
      await grpc.close(2000);
      await httpApi?.close();
      await http.close();
      await Promise.all(loops);
      podResources?.client.close();
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
      const results = await Promise.all(runners.map((r) => r.relistOnce(shutdown.signal)));
      return results.every(Boolean);
    },
    pollPodResources: () =>
      podResources === undefined
        ? Promise.resolve(undefined)
        : podResources.poller.pollOnce(shutdown.signal),
    close,
    [Symbol.asyncDispose]: close,
  };
}

/**
 * The podresources loop of `--pod-resources-endpoint` (`none`: off), feeding
 * the pipeline. Left empty, the kubelet's socket is used where it exists: a
 * node without it just has the feature off, and nothing counts as an error.
 */
function startPodResources(
  config: ServeConfig,
  deps: DaemonDeps,
  pipeline: PodPipeline,
  metrics: Metrics,
): { client: PodResourcesClient; poller: PodResourcesPoller } | undefined {
  const given = config.podResourcesEndpoint;
  if (given === "none") {
    pipeline.devices.setAvailability(false, "--pod-resources-endpoint is none");
    return undefined;
  }
  const endpoint = given === "" ? DEFAULT_POD_RESOURCES_ENDPOINT : given;
  const client = new PodResourcesClient(endpoint);
  const poller = new PodResourcesPoller({
    api: client,
    sink: {
      resources: (pods) => pipeline.applyResources(pods),
      allocatable: (allocatable) => pipeline.applyAllocatable(allocatable),
      availability: (available, reason) => pipeline.devices.setAvailability(available, reason),
    },
    clock: deps.clock,
    metrics,
    log: deps.log.child("podresources"),
    periodMs: config.relistPeriodMs,
    // Not asked for: the feature is on where the kubelet's socket is.
    ...(given === "" ? { optionalSocket: client.path } : {}),
  });
  return { client, poller };
}
