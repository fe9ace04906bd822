/**
 * Serves a CRI runtime (normally the in-memory {@linkcode SimCriRuntime}) as
 * `runtime.v1.RuntimeService` on a UNIX socket with grpc-js, so that the CRI
 * client and relist code run against it exactly as against containerd.
 *
 * @module
 */

import {
  type sendUnaryData,
  Server,
  ServerCredentials,
  type ServerErrorResponse,
  type ServerUnaryCall,
  type ServerWritableStream,
  status,
  type UntypedHandleCall,
} from "@grpc/grpc-js";
import {
  type ContainerEventResponse,
  CRI_METHODS,
  CriCallError,
  type CriMethodName,
  type GetEventsRequest,
  parseRuntimeEndpoint,
  type RuntimeService,
  runtimeServiceDefinition,
} from "../sources/cri/mod.ts";

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

function toServiceError(err: unknown): ServerErrorResponse {
  if (err instanceof CriCallError) {
    return Object.assign(new Error(err.message), { code: err.code, details: err.message });
  }
  return Object.assign(new Error(String(err)), {
    code: status.INTERNAL,
    details: err instanceof Error ? err.message : String(err),
  });
}

/** A running CRI server; close it (or `await using`) to stop serving. */
export class CriServer implements AsyncDisposable {
  /** The socket path. */
  readonly socketPath: string;
  /** The endpoint clients use: `unix://<socketPath>`. */
  readonly endpoint: string;
  /** Whether GetContainerEvents is served (false: UNIMPLEMENTED). */
  eventsImplemented: boolean;
  readonly #server: Server;
  readonly #streams = new Set<AbortController>();
  #closed = false;

  /**
   * Use {@linkcode startCriServer}.
   *
   * @param server The bound grpc-js server.
   * @param options The socket path and events switch.
   */
  constructor(server: Server, options: CriServerOptions) {
    this.#server = server;
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
    this.#server.forceShutdown();
    await Deno.remove(this.socketPath).catch(() => {});
  }

  /** Same as {@linkcode CriServer.close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
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
  const { path, target } = parseRuntimeEndpoint(options.socketPath);
  try {
    const info = await Deno.lstat(path);
    if (info.isSocket) await Deno.remove(path);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  const grpcServer = new Server();
  const server = new CriServer(grpcServer, { ...options, socketPath: path });

  const handlers: Record<string, UntypedHandleCall> = {};
  for (
    const [name, m] of Object.entries(CRI_METHODS) as [
      CriMethodName,
      typeof CRI_METHODS[CriMethodName],
    ][]
  ) {
    if (m.responseStream) continue;
    handlers[m.rpc] = (
      call: ServerUnaryCall<unknown, unknown>,
      callback: sendUnaryData<unknown>,
    ) => {
      const fn = runtime[name] as (request: unknown) => Promise<unknown>;
      fn.call(runtime, call.request).then(
        (value) => callback(null, value),
        (err) => callback(toServiceError(err)),
      );
    };
  }
  handlers[CRI_METHODS.getContainerEvents.rpc] = (
    call: ServerWritableStream<GetEventsRequest, ContainerEventResponse>,
  ) => {
    if (!server.eventsImplemented) {
      call.emit("error", {
        code: status.UNIMPLEMENTED,
        details: "method GetContainerEvents not implemented",
      });
      return;
    }
    const controller = new AbortController();
    const untrack = server.trackStream(controller);
    call.on("cancelled", () => controller.abort());
    (async () => {
      try {
        for await (const event of runtime.getContainerEvents({}, { signal: controller.signal })) {
          call.write(event);
        }
        if (controller.signal.aborted && !call.cancelled) {
          call.emit("error", { code: status.UNAVAILABLE, details: "server is shutting down" });
        } else if (!call.cancelled) call.end();
      } catch (err) {
        if (!call.cancelled) call.emit("error", toServiceError(err));
      } finally {
        untrack();
      }
    })();
  };
  grpcServer.addService(runtimeServiceDefinition(), handlers);
  await new Promise<void>((resolve, reject) => {
    grpcServer.bindAsync(target, ServerCredentials.createInsecure(), (err) => {
      if (err) reject(err);
      else resolve();
    });
  });
  return server;
}
