/**
 * Serves a CRI runtime (normally the in-memory {@linkcode SimCriRuntime}) as
 * `runtime.v1.RuntimeService` on a UNIX socket with our gRPC layer, so that the CRI
 * client and relist code run against it exactly as against containerd.
 *
 * @module
 */

import { GrpcServer, type MethodHandler } from "../../grpc/server.ts";
import { GrpcError, STATUS } from "../../grpc/status.ts";
import {
  CRI_METHODS,
  CriCallError,
  type CriMethodName,
  parseRuntimeEndpoint,
  type RuntimeService,
} from "../../sources/cri/mod.ts";

/** Options of {@linkcode startCriServer}. */
export interface CriServerOptions {
  /** Where to listen: an absolute socket path (a stale socket file there is replaced). */
  socketPath: string;
  /**
   * Whether GetContainerEvents is served; false answers UNIMPLEMENTED as
   * containerd 1.6 does. Can be changed later on the server.
   * @default {true}
   */
  eventsImplemented?: boolean;
}

function toGrpcError(err: unknown): GrpcError {
  if (err instanceof GrpcError) return err;
  if (err instanceof CriCallError) {
    return new GrpcError(err.code as GrpcError["code"], err.message);
  }
  return new GrpcError(STATUS.INTERNAL, err instanceof Error ? err.message : String(err));
}

/** A running CRI server; close it (or `await using`) to stop serving. */
export class CriServer implements AsyncDisposable {
  /** The socket path. */
  readonly socketPath: string;
  /** The endpoint clients use: `unix://<socketPath>`. */
  readonly endpoint: string;
  /** Whether GetContainerEvents is served (false: UNIMPLEMENTED). */
  eventsImplemented: boolean;
  readonly #server: GrpcServer;
  readonly #listener: Deno.Listener;
  readonly #streams = new Set<AbortController>();
  #closed = false;

  /**
   * Use {@linkcode startCriServer}.
   *
   * @param server The gRPC server.
   * @param listener The bound socket.
   * @param options The socket path and events switch.
   */
  constructor(server: GrpcServer, listener: Deno.Listener, options: CriServerOptions) {
    this.#server = server;
    this.#listener = listener;
    this.socketPath = options.socketPath;
    this.endpoint = `unix://${options.socketPath}`;
    this.eventsImplemented = options.eventsImplemented ?? true;
  }

  /** @internal Registers a stream so that close() ends it. */
  trackStream(controller: AbortController): () => void {
    this.#streams.add(controller);
    return () => this.#streams.delete(controller);
  }

  /**
   * Stops serving at once (as a runtime that dies): open streams end with
   * an error, the socket file is removed.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const c of this.#streams) c.abort();
    this.#server.unserve(this.#listener);
    await this.#server.close(0);
    await Deno.remove(this.socketPath).catch(() => {});
  }

  /** Same as {@linkcode CriServer.close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

async function answers(path: string): Promise<boolean> {
  try {
    (await Deno.connect({ transport: "unix", path })).close();
    return true;
  } catch {
    return false;
  }
}

/**
 * Starts serving `runtime` on a UNIX socket.
 *
 * @example Usage
 * ```ts ignore
 * import { SimCriRuntime } from "./cri_runtime.ts";
 * import { startCriServer } from "./cri_server.ts";
 * await using server = await startCriServer(new SimCriRuntime(), {
 *   socketPath: "/tmp/sim-cri.sock",
 * });
 * server.endpoint; // "unix:///tmp/sim-cri.sock"
 * ```
 *
 * @param runtime The runtime to serve.
 * @param options Socket path, events switch.
 * @returns The server.
 * @throws {TypeError} When the path is not absolute.
 * @throws {Error} When the socket cannot be bound.
 */
export async function startCriServer(
  runtime: RuntimeService,
  options: CriServerOptions,
): Promise<CriServer> {
  const { path } = parseRuntimeEndpoint(options.socketPath);
  try {
    const info = await Deno.lstat(path);
    if (info.isSocket) {
      // Another simulated node answering there keeps its socket: a second
      // `serve --simulate` in the same directory fails without harming it.
      if (await answers(path)) {
        throw new Error(
          `Cannot listen on "${path}": another simulated runtime is accepting connections there`,
        );
      }
      await Deno.remove(path);
    }
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  const methods = new Map<string, MethodHandler>();
  const grpcServer = new GrpcServer({ methods, maxReceiveMessageBytes: 16 * 1024 * 1024 });
  const listener = Deno.listen({ transport: "unix", path });
  const server = new CriServer(grpcServer, listener, { ...options, socketPath: path });
  for (
    const [name, m] of Object.entries(CRI_METHODS) as [
      CriMethodName,
      typeof CRI_METHODS[CriMethodName],
    ][]
  ) {
    if (m.responseStream) continue;
    methods.set(m.path, {
      kind: "unary",
      async handle(request) {
        const fn = runtime[name] as (request: unknown) => Promise<unknown>;
        try {
          const value = await fn.call(runtime, m.request.decode(request));
          return (m.response.encode as (value: unknown) => Uint8Array)(value);
        } catch (err) {
          throw toGrpcError(err);
        }
      },
    });
  }
  const events = CRI_METHODS.getContainerEvents;
  methods.set(events.path, {
    kind: "serverStream",
    async handle(_request, call, sink) {
      if (!server.eventsImplemented) {
        throw new GrpcError(STATUS.UNIMPLEMENTED, "method GetContainerEvents not implemented");
      }
      const controller = new AbortController();
      const untrack = server.trackStream(controller);
      const signal = AbortSignal.any([controller.signal, call.signal]);
      try {
        for await (const event of runtime.getContainerEvents({}, { signal })) {
          await sink.send(events.response.encode(event));
        }
        if (controller.signal.aborted) {
          throw new GrpcError(STATUS.UNAVAILABLE, "server is shutting down");
        }
      } catch (err) {
        throw toGrpcError(err);
      } finally {
        untrack();
      }
    },
  });
  grpcServer.serve(listener);
  return server;
}
