/**
 * The API socket: every service (both Pods services and PodQuery) served by
 * our gRPC layer on the daemon's own UNIX socket, bound atomically with its
 * permissions, re-bound if its file disappears, with the transport's
 * troubles counted in the metrics; and, optionally, `v1alpha1.Pods` alone on
 * the kubelet's path while no kubelet serves it (`--kubelet-compat-socket`).
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import type { ConnectionLimits } from "../h2/connection.ts";
import { h2ErrorName } from "../h2/errors.ts";
import { GrpcServer, type GrpcServerObserver, type MethodHandler } from "../grpc/server.ts";
import type { Logger } from "../log.ts";
import type { Metrics, ServerApiVersion } from "../metrics/metrics.ts";
import { type AdaptOptions, serverStream, unary } from "./adapt.ts";
import type { PodsService } from "./pods_service.ts";
import type { PodQueryService } from "./pod_query_service.ts";
import { type ServedSocket, serveSocket } from "./served_socket.ts";
import type { OwnSockets } from "./unix_socket.ts";

/** Options of {@linkcode startGrpcServer}. */
export interface GrpcServerOptions {
  socketPath: string;
  /**
   * The kubelet's Pods API path, to serve `v1alpha1.Pods` on while no other
   * server does; `""` or the main path: none. @default {""}
   */
  compatSocketPath?: string;
  /** Where the daemon records the sockets it bound (so it never reads its own). */
  ownSockets?: OwnSockets;
  /** Group allowed to connect. @default {"root"} */
  socketGroup?: string;
  /** Largest request accepted, bytes. @default {65536} */
  maxReceiveMessageBytes?: number;
  /** Largest response sent, bytes. @default {268435456} */
  maxSendMessageBytes?: number;
  /** Concurrent streams per client connection. @default {1100} */
  maxConcurrentStreams?: number;
  /** Open client connections at once. @default {1024} */
  maxConnections?: number;
  /** Further HTTP/2 limits (tests tighten them). */
  limits?: Partial<ConnectionLimits>;
}

/** What {@linkcode startGrpcServer} needs. */
export interface GrpcServerDeps {
  service: PodsService;
  /** `podsapi.v1.PodQuery`, served on the same socket when given. */
  query?: PodQueryService;
  metrics: Metrics;
  log: Logger;
  /** Runs call deadlines, the connections' timers and the socket checks. @default {systemClock} */
  clock?: Clock;
}

/** A running server; disposing it stops it and removes the socket. */
export interface RunningGrpcServer extends AsyncDisposable {
  readonly socketPath: string;
  /** The compatibility socket, when configured. */
  readonly compat: Pick<ServedSocket, "path" | "serving"> | undefined;
  /** The transport, to serve on more listeners (tests put h2spec on a TCP port). */
  readonly server: GrpcServer;
  /** Stops accepting calls, waits up to `graceMs` for calls to end, then cuts the rest. */
  close(graceMs?: number): Promise<void>;
}

/** The methods of one Pods service under its path prefix. */
function podsMethods(
  deps: GrpcServerDeps,
  service: "v1alpha1.Pods" | "Pods",
  apiVersion: ServerApiVersion,
): [string, MethodHandler][] {
  const options = (method: AdaptOptions["method"]): AdaptOptions => ({
    apiVersion,
    method,
    metrics: deps.metrics,
    log: deps.log,
  });
  return [
    [`/${service}/ListPods`, unary((_request, ctx) => deps.service.listPods(ctx), options("list"))],
    [
      `/${service}/GetPod`,
      unary((request, ctx) => deps.service.getPod(request, ctx), options("get")),
    ],
    [
      `/${service}/WatchPods`,
      serverStream((_request, ctx, sink) => deps.service.watchPods(ctx, sink), options("watch")),
    ],
  ];
}

/** The methods of `podsapi.v1.PodQuery` (DESIGN.md §14), when the daemon serves it. */
function podQueryMethods(deps: GrpcServerDeps): [string, MethodHandler][] {
  const query = deps.query;
  if (query === undefined) return [];
  const options = (method: AdaptOptions["method"]): AdaptOptions => ({
    apiVersion: "podsapi_v1",
    method,
    metrics: deps.metrics,
    log: deps.log,
  });
  return [
    ["/podsapi.v1.PodQuery/List", unary((req, ctx) => query.list(req, ctx), options("list"))],
    ["/podsapi.v1.PodQuery/Get", unary((req, ctx) => query.get(req, ctx), options("get"))],
    [
      "/podsapi.v1.PodQuery/Watch",
      serverStream((req, ctx, sink) => query.watch(req, ctx, sink), options("watch")),
    ],
    [
      "/podsapi.v1.PodQuery/ListDevices",
      unary((req, ctx) => query.listDevices(req, ctx), options("list")),
    ],
  ];
}

/**
 * Binds the UNIX socket (atomically, with its permissions) and serves both
 * Pods services on it.
 *
 * @param options Socket path, group and limits.
 * @param deps Handlers, metrics and log.
 * @returns The running server.
 * @throws {Error} When the socket path cannot be used.
 */
export async function startGrpcServer(
  options: GrpcServerOptions,
  deps: GrpcServerDeps,
): Promise<RunningGrpcServer> {
  const { metrics, log } = deps;
  const observer = transportObserver(deps);
  const limits = {
    maxConcurrentStreams: options.maxConcurrentStreams ?? 1100,
    // Largest request metadata accepted.
    maxHeaderListSize: 16 * 1024,
    // A connection with no call for 5 minutes is closed gracefully (clients
    // reconnect on their next call); one with calls but silent for 2
    // minutes is PINGed and closed if the PING is not answered in 20 s, so
    // a frozen or vanished client does not hold its watches forever.
    idleTimeoutMs: 5 * 60_000,
    keepaliveMs: 2 * 60_000,
    keepaliveTimeoutMs: 20_000,
    ...options.limits,
  };
  const serverOf = (methods: [string, MethodHandler][]) =>
    new GrpcServer({
      methods: new Map(methods),
      maxReceiveMessageBytes: options.maxReceiveMessageBytes ?? 64 * 1024,
      maxSendMessageBytes: options.maxSendMessageBytes ?? 256 * 1024 * 1024,
      maxConnections: options.maxConnections ?? 1024,
      limits,
      observer,
      log,
      ...(deps.clock === undefined ? {} : { clock: deps.clock }),
    });
  const server = serverOf([
    ...podsMethods(deps, "v1alpha1.Pods", "v1alpha1"),
    ...podsMethods(deps, "Pods", "v1"),
    ...podQueryMethods(deps),
  ]);
  const socket = {
    ...(options.socketGroup === undefined ? {} : { group: options.socketGroup }),
    ...(options.ownSockets === undefined ? {} : { own: options.ownSockets }),
  };
  const clock = deps.clock === undefined ? {} : { clock: deps.clock };
  const main = await serveSocket(server, { ...socket, path: options.socketPath, role: "main" }, {
    log,
    metrics,
    ...clock,
  });
  const compatPath = options.compatSocketPath ?? "";
  let compatServer: GrpcServer | undefined;
  let compat: ServedSocket | undefined;
  if (compatPath !== "" && compatPath !== options.socketPath) {
    compatServer = serverOf(podsMethods(deps, "v1alpha1.Pods", "v1alpha1"));
    compat = await serveSocket(compatServer, { ...socket, path: compatPath, role: "compat" }, {
      log: log.child("compat-socket"),
      metrics,
      ...clock,
    });
  }
  let closed: Promise<void> | undefined;
  const close = (graceMs = 2000): Promise<void> => {
    closed ??= (async () => {
      await Promise.all([main.close(), compat?.close()]);
      await Promise.all([server.close(graceMs), compatServer?.close(graceMs)]);
    })();
    return closed;
  };
  return {
    socketPath: options.socketPath,
    compat,
    server,
    close,
    [Symbol.asyncDispose]: () => close(),
  };
}

/** The transport's troubles, counted and logged, for every server of the daemon. */
function transportObserver(deps: GrpcServerDeps): GrpcServerObserver {
  const { metrics, log } = deps;
  return {
    connectionOpened() {
      metrics.connections.inc();
      metrics.connectionsAccepted.inc();
    },
    connectionClosed: () => metrics.connections.dec(),
    connectionRefused(reason) {
      metrics.transportErrors.inc({ kind: "refused", code: "" });
      metrics.connectionsRefused.inc({ listener: "socket", reason });
    },
    acceptFailed: (code) => metrics.acceptErrors.inc({ listener: "socket", code }),
    protocolError(scope, code, message) {
      const kind = scope === "connection" ? "protocol" : "stream";
      metrics.transportErrors.inc({ kind, code: h2ErrorName(code) });
      log.debug("client broke HTTP/2", { scope, code: h2ErrorName(code), message });
    },
    handlerError(path, error) {
      metrics.transportErrors.inc({ kind: "handler", code: "" });
      log.error("request failed", { path, error });
    },
    internalError(error) {
      metrics.transportErrors.inc({ kind: "internal", code: "" });
      log.error("connection failed; closed it", { error });
    },
  };
}
