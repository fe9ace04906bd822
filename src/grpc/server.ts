/**
 * A gRPC server on our HTTP/2 connections: routes calls by path to unary
 * and server-streaming handlers, turns `grpc-timeout` (timed on the injected
 * clock) and client cancels into an AbortSignal, writes responses
 * (pre-framed messages as they are) and trailers, answers non-gRPC requests
 * with a plain HTTP error, and shuts down in two phases. Each call, from
 * its request headers to its trailers, is a `CallState` (`_server_call.ts`).
 *
 * @module
 */

import { type Clock, systemClock } from "../clock.ts";
import { type ConnectionLimits, DEFAULT_LIMITS, Http2Connection } from "../h2/connection.ts";
import { AcceptLoop, type RefusalReason } from "../listen/accept_loop.ts";
import { type Logger, silentLogger } from "../log.ts";
import { clockSleep } from "../sleep.ts";
import { encodeHeaderBlockWithoutIndexing, type HeaderField } from "../h2/hpack.ts";
import type { Http2Stream } from "../h2/stream.ts";
import { CallState, type MethodHandler, readRequestHeaders, statusFields } from "./_server_call.ts";
import { STATUS, type StatusCode } from "./status.ts";

export type { MessageSink, MethodHandler, ServerCall } from "./_server_call.ts";

/** What the server reports, for metrics and logs. */
export interface GrpcServerObserver {
  connectionOpened?(): void;
  connectionClosed?(): void;
  /** A connection was closed as accepted: too many open, or the server is closing. */
  connectionRefused?(reason: RefusalReason): void;
  /** An accept failed (`EMFILE`...); the listener waits and accepts again. */
  acceptFailed?(code: string): void;
  /** A peer broke HTTP/2 (connection) or one stream's rules. */
  protocolError?(scope: "connection" | "stream", code: number, message: string): void;
  /** A handler threw something that is not a {@linkcode GrpcError}; the client got INTERNAL. */
  handlerError?(path: string, error: unknown): void;
  /** Code in a connection threw; that connection was closed. */
  internalError?(error: unknown): void;
}

/** Options of {@linkcode GrpcServer}. */
export interface GrpcServerOptions {
  /** Methods by path. */
  methods: ReadonlyMap<string, MethodHandler>;
  /** Largest request message, bytes. @default {65536} */
  maxReceiveMessageBytes?: number;
  /** Largest response message, bytes. @default {268435456} */
  maxSendMessageBytes?: number;
  /** Open connections at once; more are closed at once. @default {1024} */
  maxConnections?: number;
  /** A stream's unsent backlog at which `send` waits, bytes. @default {262144} */
  streamHighWaterBytes?: number;
  /** HTTP/2 limits of each connection. */
  limits?: Partial<ConnectionLimits>;
  observer?: GrpcServerObserver;
  /** Runs call deadlines and the connections' timers. @default {systemClock} */
  clock?: Clock;
  /** Where a listener that cannot accept says so (once per burst). @default {silentLogger} */
  log?: Logger;
}

const TEXT = new TextEncoder();
const NOT_GRPC_BODY = TEXT.encode(
  "This is a gRPC server: send POST requests with content-type application/grpc over HTTP/2.\n",
);

/** `application/grpc`, alone or followed by `+format` or `;parameters`. */
function isGrpcContentType(value: string): boolean {
  if (value === "application/grpc") return true;
  return /^application\/grpc[+;]/.test(value);
}

/** A gRPC server; give it listeners with {@linkcode GrpcServer.serve}. */
export class GrpcServer {
  readonly #options: GrpcServerOptions;
  readonly #connections = new Set<Http2Connection>();
  readonly #loops = new Map<Deno.Listener, { loop: AcceptLoop; done: Promise<void> }>();
  #closing = false;

  /** @param options Methods, limits and observer. */
  constructor(options: GrpcServerOptions) {
    this.#options = options;
  }

  /** Open client connections. */
  get connectionCount(): number {
    return this.#connections.size;
  }

  /**
   * Accepts connections from `listener` until it or the server closes.
   *
   * @param listener A unix or tcp listener.
   */
  serve(listener: Deno.Listener): void {
    const observer = this.#options.observer;
    const loop = new AcceptLoop(listener, {
      name: "grpc",
      maxConnections: this.#options.maxConnections ?? 1024,
      openConnections: () => this.#connections.size,
      observer: {
        refused: (reason) => observer?.connectionRefused?.(reason),
        acceptFailed: (code) => observer?.acceptFailed?.(code),
      },
      log: this.#options.log ?? silentLogger,
      sleep: clockSleep(this.#options.clock ?? systemClock),
    });
    if (this.#closing) loop.drain();
    const done = loop.run((conn) => this.#accept(conn)).finally(() => this.#loops.delete(listener));
    this.#loops.set(listener, { loop, done });
  }

  /**
   * Stops accepting on one listener (its socket is the caller's to remove).
   *
   * @param listener A listener given to {@linkcode GrpcServer.serve}.
   */
  unserve(listener: Deno.Listener): void {
    this.#loops.get(listener)?.loop.close();
  }

  #accept(conn: Deno.Conn): Promise<void> {
    const observer = this.#options.observer;
    const connection: Http2Connection = new Http2Connection(conn, {
      role: "server",
      ...(this.#options.limits === undefined ? {} : { limits: this.#options.limits }),
      clock: this.#options.clock ?? systemClock,
      onStream: (stream, fields, endStream, oversizedBytes) =>
        this.#onStream(connection, stream, fields, endStream, oversizedBytes),
      observer: {
        connectionError: (code, message) => observer?.protocolError?.("connection", code, message),
        streamError: (code, message) => observer?.protocolError?.("stream", code, message),
        internalError: (error) => observer?.internalError?.(error),
      },
    });
    this.#connections.add(connection);
    observer?.connectionOpened?.();
    return connection.run().finally(() => {
      this.#connections.delete(connection);
      observer?.connectionClosed?.();
    });
  }

  #onStream(
    connection: Http2Connection,
    stream: Http2Stream,
    fields: HeaderField[],
    endStream: boolean,
    oversizedBytes: number,
  ): void {
    if (oversizedBytes > 0) {
      const limit = this.#options.limits?.maxHeaderListSize ?? DEFAULT_LIMITS.maxHeaderListSize;
      return this.#refuse(
        stream,
        STATUS.RESOURCE_EXHAUSTED,
        `Cannot accept request metadata of "${oversizedBytes}" bytes: the limit is "${limit}"`,
      );
    }
    const request = readRequestHeaders(fields);
    if (!isGrpcContentType(request.contentType)) {
      return this.#plainHttpError(stream, 415, endStream);
    }
    if (request.method !== "POST") {
      return this.#plainHttpError(stream, 405, endStream);
    }
    const call = new CallState(stream, request, connection, this.#options);
    call.start(endStream);
  }

  /** Trailers-Only refusal before the request is read; the rest of it is not wanted. */
  #refuse(stream: Http2Stream, code: StatusCode, message: string): void {
    stream.sendHeaders({
      fields: [
        [":status", "200"],
        ["content-type", "application/grpc"],
        ...statusFields(code, message),
      ],
    }, true);
  }

  /** Answers a request that is not gRPC once it has been read whole (its body is discarded). */
  #plainHttpError(stream: Http2Stream, status: 405 | 415, endStream: boolean): void {
    const respond = () => {
      stream.sendHeaders({
        block: encodeHeaderBlockWithoutIndexing([
          [":status", String(status)],
          ["content-type", "text/plain"],
          ["grpc-status", String(STATUS.UNIMPLEMENTED)],
        ]),
      }, false);
      stream.sendData(NOT_GRPC_BODY, true);
    };
    if (endStream) return respond();
    stream.listener = {
      onData(chunk, end) {
        stream.release(chunk.byteLength);
        if (end) respond();
      },
      onHeaders(_fields, end) {
        if (end) respond();
      },
    };
  }

  /**
   * Graceful shutdown: stop accepting, GOAWAY on every connection, let calls
   * end (the application ends its long calls on its own signal), then close
   * what is left after `graceMs`.
   *
   * @param graceMs Longest wait for calls in flight.
   */
  async close(graceMs = 2000): Promise<void> {
    this.#closing = true;
    const loops = [...this.#loops.values()];
    for (const { loop } of loops) loop.close();
    await Promise.all([...this.#connections].map((c) => c.shutdown(graceMs)));
    await Promise.all(loops.map((l) => l.done));
  }
}
