/**
 * The gRPC server on the UNIX socket: both Pods services registered on the
 * same handlers, with byte-level (de)serializers so pods encoded once by the
 * cache are written as they are.
 *
 * @module
 */

import {
  type Metadata,
  Server,
  ServerCredentials,
  ServerInterceptingCall,
  type ServerInterceptor,
  status,
} from "@grpc/grpc-js";
import type { Logger } from "../log.ts";
import type { Metrics, ServerApiVersion } from "../metrics/metrics.ts";
import { type AdaptOptions, serverStream, unary } from "./adapt.ts";
import type { PodsService } from "./pods_service.ts";
import { prepareSocketPath, removeSocket } from "./unix_socket.ts";
import { watchSocket } from "./socket_watchdog.ts";
import { podsServiceDefinition } from "./service_definition.ts";

/** Options of {@linkcode startGrpcServer}. */
export interface GrpcServerOptions {
  socketPath: string;
  /** Group allowed to connect. @default {"root"} */
  socketGroup?: string;
  /** Largest request accepted, bytes. @default {65536} */
  maxReceiveMessageBytes?: number;
  /** Largest response sent, bytes. @default {268435456} */
  maxSendMessageBytes?: number;
  /** Largest request metadata accepted, bytes. @default {16384} */
  maxMetadataBytes?: number;
  /** How often to check that the socket file still exists, ms. @default {2000} */
  socketCheckMs?: number;
  /** Concurrent streams per client connection. @default {1100} */
  maxConcurrentStreams?: number;
}

/** What {@linkcode startGrpcServer} needs. */
export interface GrpcServerDeps {
  service: PodsService;
  metrics: Metrics;
  log: Logger;
}

/** A running server; disposing it stops it and removes the socket. */
export interface RunningGrpcServer extends AsyncDisposable {
  readonly socketPath: string;
  /** Stops accepting calls, waits up to `graceMs` for calls to end, then cuts the rest. */
  close(graceMs?: number): Promise<void>;
}

/** A header list's size as HTTP/2 counts it: name, value and 32 bytes per entry. */
function metadataBytes(metadata: Metadata): number {
  let size = 0;
  for (const [key, value] of Object.entries(metadata.toHttp2Headers())) {
    for (const v of Array.isArray(value) ? value : [value]) {
      size += key.length + String(v).length + 32;
    }
  }
  return size;
}

/**
 * Enforces the request metadata limit: grpc-js accepts `grpc.max_metadata_size`
 * on a server but does not apply it, so without this the limit is whatever the
 * HTTP/2 layer allows.
 */
function metadataLimit(maxBytes: number): ServerInterceptor {
  return (_method, call) =>
    new ServerInterceptingCall(call, {
      start(next) {
        next({
          onReceiveMetadata(metadata, forward) {
            const size = metadataBytes(metadata);
            if (size <= maxBytes) return forward(metadata);
            call.sendStatus({
              code: status.RESOURCE_EXHAUSTED,
              details:
                `Cannot accept request metadata of "${size}" bytes: the limit is "${maxBytes}"`,
            });
          },
        });
      },
    });
}

function handlers(deps: GrpcServerDeps, apiVersion: ServerApiVersion) {
  const options = (method: AdaptOptions["method"]): AdaptOptions => ({
    apiVersion,
    method,
    metrics: deps.metrics,
    log: deps.log,
  });
  return {
    ListPods: unary((_request, ctx) => deps.service.listPods(ctx), options("list")),
    GetPod: unary((request, ctx) => deps.service.getPod(request, ctx), options("get")),
    WatchPods: serverStream((ctx, sink) => deps.service.watchPods(ctx, sink), options("watch")),
  };
}

/**
 * Binds the UNIX socket (atomically, with its permissions) and serves both
 * Pods services on it.
 *
 * @param options Socket path, group and message limits.
 * @param deps Handlers, metrics and log.
 * @returns The running server.
 * @throws {Error} When the socket path cannot be used.
 */
export async function startGrpcServer(
  options: GrpcServerOptions,
  deps: GrpcServerDeps,
): Promise<RunningGrpcServer> {
  const prepared = await prepareSocketPath(
    options.socketPath,
    options.socketGroup === undefined ? {} : { group: options.socketGroup },
  );
  const maxMetadataBytes = options.maxMetadataBytes ?? 16 * 1024;
  const server = new Server({
    "grpc.max_receive_message_length": options.maxReceiveMessageBytes ?? 64 * 1024,
    "grpc.max_send_message_length": options.maxSendMessageBytes ?? 256 * 1024 * 1024,
    "grpc.max_metadata_size": maxMetadataBytes,
    "grpc.max_concurrent_streams": options.maxConcurrentStreams ?? 1100,
    interceptors: [metadataLimit(maxMetadataBytes)],
  });
  server.addService(podsServiceDefinition("v1alpha1.Pods"), handlers(deps, "v1alpha1"));
  server.addService(podsServiceDefinition("Pods"), handlers(deps, "v1"));
  const bind = (path: string) =>
    new Promise<void>((resolve, reject) => {
      server.bindAsync(
        `unix:${path}`,
        ServerCredentials.createInsecure(),
        (err) => err ? reject(err) : resolve(),
      );
    });
  await bind(prepared.tempPath);
  try {
    await prepared.publish();
  } catch (err) {
    server.forceShutdown();
    await removeSocket(prepared.tempPath);
    throw err;
  }
  const stopWatchdog = new AbortController();
  const group = options.socketGroup === undefined ? {} : { group: options.socketGroup };
  const watchdog = watchSocket({
    path: options.socketPath,
    ...(options.socketCheckMs === undefined ? {} : { checkMs: options.socketCheckMs }),
    async rebind() {
      const again = await prepareSocketPath(options.socketPath, group);
      await bind(again.tempPath);
      await again.publish();
    },
    log: deps.log,
    metrics: deps.metrics,
    signal: stopWatchdog.signal,
  });
  let closed: Promise<void> | undefined;
  const close = (graceMs = 2000): Promise<void> => {
    closed ??= (async () => {
      stopWatchdog.abort();
      await watchdog;
      await removeSocket(options.socketPath);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    })();
    return closed;
  };
  return {
    socketPath: options.socketPath,
    close,
    [Symbol.asyncDispose]: () => close(),
  };
}
