/**
 * A gRPC client on our HTTP/2 connections: one connection at a time to a
 * unix socket or a tcp address, opened on the first call and again after
 * the peer goes away; unary and server-streaming calls with deadlines,
 * cancellation through an AbortSignal, and window updates only as fast as
 * the caller reads a stream.
 *
 * @module
 */

import { type CancelTimer, type Clock, systemClock } from "../clock.ts";
import { ConnectionClosedError, Http2Connection } from "../h2/connection.ts";
import { H2_ERROR } from "../h2/errors.ts";
import { headerValue } from "../h2/header_rules.ts";
import type { HeaderField } from "../h2/hpack.ts";
import type { Http2Stream } from "../h2/stream.ts";
import { BODY_POOL } from "./_body_pool.ts";
import { frameMessage, MessageReader } from "./message_framing.ts";
import { decodeGrpcMessage, formatTimeout, metadataFields } from "./metadata.ts";
import { GrpcError, parseStatusCode, STATUS, statusFromHttp } from "./status.ts";

/** Where a channel connects. */
export type ChannelTarget =
  | { readonly transport: "unix"; readonly path: string }
  | { readonly transport: "tcp"; readonly hostname: string; readonly port: number };

/** Options of {@linkcode GrpcChannel}. */
export interface GrpcChannelOptions {
  /** Largest response message, bytes. @default {16777216} */
  maxReceiveMessageBytes?: number;
  /** Sent as `user-agent`. @default {"pods-api"} */
  userAgent?: string;
  /** Runs call deadlines and the connection's timers. @default {systemClock} */
  clock?: Clock;
}

/** Options of one call. */
export interface CallOptions {
  /** Time allowed for the call, ms (sent as `grpc-timeout`). */
  timeoutMs?: number;
  /** Cancels the call. */
  signal?: AbortSignal;
  /** Request metadata; `-bin` keys take bytes. */
  metadata?: Readonly<Record<string, string | Uint8Array>>;
}

/** A server-streaming call: its messages in order, then its end. */
export interface ServerStreamCall extends AsyncIterable<Uint8Array> {
  /** Ends the call from this side (RST_STREAM CANCEL). */
  cancel(): void;
}

/** Where a call of {@linkcode GrpcChannel.unaryDecoded} reads its answer. */
const TAKE_POOLED_BODY = (length: number) => BODY_POOL.take(length);

/** A gRPC channel to one server. */
export class GrpcChannel implements Disposable {
  readonly target: ChannelTarget;
  readonly #maxBytes: number;
  readonly #userAgent: string;
  readonly #clock: Clock;
  #connection: Http2Connection | undefined;
  /** Every connection not closed yet, the current one included. */
  readonly #connections = new Set<Http2Connection>();
  #connecting: Promise<Http2Connection> | undefined;
  #closed = false;

  /**
   * Creates a channel; it connects on the first call.
   *
   * @param target A unix socket path or tcp address.
   * @param options Message size limit, user agent and clock.
   */
  constructor(target: ChannelTarget, options: GrpcChannelOptions = {}) {
    this.target = target;
    this.#maxBytes = options.maxReceiveMessageBytes ?? 16 * 1024 * 1024;
    this.#userAgent = options.userAgent ?? "pods-api";
    this.#clock = options.clock ?? systemClock;
  }

  /** Closes the connection; calls in flight fail with UNAVAILABLE. */
  close(): void {
    this.#closed = true;
    // Older connections (gone away, or left at the peer's stream limit) may still carry calls.
    for (const connection of this.#connections) connection.close();
    this.#connection = undefined;
  }

  /** Same as {@linkcode GrpcChannel.close}. */
  [Symbol.dispose](): void {
    this.close();
  }

  /**
   * A unary call.
   *
   * @param path `/package.Service/Method`.
   * @param request The serialized request.
   * @param options Deadline, cancellation, metadata.
   * @returns The serialized response.
   * @throws {GrpcError} With the status the server sent, or UNAVAILABLE,
   *   DEADLINE_EXCEEDED, CANCELLED, INTERNAL as the client saw it.
   */
  unary(path: string, request: Uint8Array, options: CallOptions = {}): Promise<Uint8Array> {
    return this.#unary(path, request, options, undefined);
  }

  /**
   * A unary call whose response is read by `decode` as soon as it is whole,
   * in a buffer that is used again afterwards (`_body_pool.ts`): for large
   * answers read often, like a container runtime's lists. `decode` must keep
   * no view of its bytes: whatever it returns must be a copy.
   *
   * @param path `/package.Service/Method`.
   * @param request The serialized request.
   * @param decode Reads the response; what it throws is thrown.
   * @param options Deadline, cancellation, metadata.
   * @returns What `decode` returned.
   * @throws {GrpcError} As {@linkcode GrpcChannel.unary}.
   */
  async unaryDecoded<T>(
    path: string,
    request: Uint8Array,
    decode: (response: Uint8Array) => T,
    options: CallOptions = {},
  ): Promise<T> {
    const response = await this.#unary(path, request, options, TAKE_POOLED_BODY);
    try {
      return decode(response);
    } finally {
      BODY_POOL.give(response);
    }
  }

  async #unary(
    path: string,
    request: Uint8Array,
    options: CallOptions,
    body: ((length: number) => Uint8Array) | undefined,
  ): Promise<Uint8Array> {
    // A stream the server refused before processing it (GOAWAY) is retried once, as gRPC does.
    for (let attempt = 0;; attempt++) {
      const call = await this.#start(path, request, options, body);
      try {
        let response: Uint8Array | undefined;
        for await (const message of call.messages()) {
          if (response !== undefined) {
            throw new GrpcError(STATUS.INTERNAL, "Cannot take a second response to a unary call");
          }
          response = message;
        }
        if (response === undefined) {
          throw new GrpcError(STATUS.INTERNAL, "The server sent no response message");
        }
        return response;
      } catch (err) {
        if (attempt === 0 && call.refused) continue;
        throw err;
      } finally {
        call.cancel();
      }
    }
  }

  /**
   * A server-streaming call. The server may send only as much as the caller
   * has read plus one window.
   *
   * @param path `/package.Service/Method`.
   * @param request The serialized request.
   * @param options Deadline, cancellation, metadata.
   * @returns The call; iterate it for messages. Iteration throws {@linkcode GrpcError} on a non-OK end.
   */
  serverStream(path: string, request: Uint8Array, options: CallOptions = {}): ServerStreamCall {
    const started = this.#start(path, request, options);
    // A call never iterated must not leave an unhandled rejection behind.
    started.catch(() => {});
    let call: ClientCall | undefined;
    let cancelled = false;
    return {
      cancel() {
        cancelled = true;
        if (call !== undefined) call.cancel();
        // Started but not iterated yet: the call must end all the same.
        else started.then((c) => c.cancel(), () => {});
      },
      async *[Symbol.asyncIterator]() {
        call = await started;
        if (cancelled) call.cancel();
        try {
          yield* call.messages();
        } finally {
          call.cancel();
        }
      },
    };
  }

  async #start(
    path: string,
    request: Uint8Array,
    options: CallOptions,
    body?: (length: number) => Uint8Array,
  ): Promise<ClientCall> {
    if (options.signal?.aborted) throw new GrpcError(STATUS.CANCELLED, "call cancelled");
    const connection = await this.#connect();
    // An abort while connecting fired before ClientCall listens to the signal.
    if (options.signal?.aborted) throw new GrpcError(STATUS.CANCELLED, "call cancelled");
    const fields: HeaderField[] = [
      [":method", "POST"],
      [":scheme", "http"],
      [":path", path],
      [
        ":authority",
        this.target.transport === "unix"
          ? "localhost"
          : `${this.target.hostname}:${this.target.port}`,
      ],
      ["content-type", "application/grpc"],
      ["te", "trailers"],
      ["user-agent", this.#userAgent],
    ];
    if (options.timeoutMs !== undefined) {
      fields.push(["grpc-timeout", formatTimeout(options.timeoutMs)]);
    }
    if (options.metadata !== undefined) fields.push(...metadataFields(options.metadata));
    let stream: Http2Stream;
    try {
      stream = connection.request(fields, false);
    } catch (err) {
      if (err instanceof ConnectionClosedError) {
        if (this.#connection === connection) this.#connection = undefined;
        throw new GrpcError(STATUS.UNAVAILABLE, `Cannot start a call: ${err.message}`);
      }
      throw err;
    }
    const call = new ClientCall(stream, this.#maxBytes, options, this.#clock, body);
    stream.sendData(frameMessage(request).bytes, true);
    return call;
  }

  async #connect(): Promise<Http2Connection> {
    if (this.#closed) throw new GrpcError(STATUS.UNAVAILABLE, "the channel is closed");
    if (this.#connection?.usable) return this.#connection;
    this.#connection = undefined;
    this.#connecting ??= this.#dial().finally(() => this.#connecting = undefined);
    return await this.#connecting;
  }

  async #dial(): Promise<Http2Connection> {
    let conn: Deno.Conn;
    try {
      conn = this.target.transport === "unix"
        ? await Deno.connect({ transport: "unix", path: this.target.path })
        : await Deno.connect({ hostname: this.target.hostname, port: this.target.port });
    } catch (err) {
      throw new GrpcError(
        STATUS.UNAVAILABLE,
        `Cannot connect to ${describe(this.target)}: ${(err as Error).message}`,
        { cause: err },
      );
    }
    const connection = new Http2Connection(conn, {
      role: "client",
      limits: { handshakeTimeoutMs: 0 },
      clock: this.#clock,
    });
    this.#connection = connection;
    this.#connections.add(connection);
    connection.run().finally(() => {
      this.#connections.delete(connection);
      if (this.#connection === connection) this.#connection = undefined;
    });
    if (this.#closed) connection.close();
    return connection;
  }
}

function describe(target: ChannelTarget): string {
  return target.transport === "unix" ? `unix:${target.path}` : `${target.hostname}:${target.port}`;
}

type Delivery =
  | { readonly kind: "message"; readonly message: Uint8Array; readonly wireBytes: number }
  | { readonly kind: "end"; readonly error: GrpcError | undefined };

/** One call in flight on the client side. */
class ClientCall {
  readonly #stream: Http2Stream;
  readonly #reader: MessageReader;
  readonly #queue: Delivery[] = [];
  #wake: (() => void) | undefined;
  #ended = false;
  #gotHeaders = false;
  /** DATA bytes received and not yet given back to the peer's window. */
  #held = 0;
  #cancelDeadline: CancelTimer | undefined;
  readonly #signal: AbortSignal | undefined;
  readonly #onAbort = () => this.#fail(new GrpcError(STATUS.CANCELLED, "call cancelled"), true);
  /** The server refused the stream before processing it. */
  refused = false;

  constructor(
    stream: Http2Stream,
    maxBytes: number,
    options: CallOptions,
    clock: Clock,
    body?: (length: number) => Uint8Array,
  ) {
    this.#stream = stream;
    this.#reader = new MessageReader(maxBytes, body);
    stream.listener = {
      onHeaders: (fields, end) => this.#onHeaders(fields, end),
      onData: (chunk, end) => this.#onData(chunk, end),
      onClose: (code) => this.#onClose(code),
    };
    if (options.timeoutMs !== undefined) {
      this.#cancelDeadline = clock.setTimer(
        options.timeoutMs,
        () => this.#fail(new GrpcError(STATUS.DEADLINE_EXCEEDED, "deadline exceeded"), true),
      );
    }
    this.#signal = options.signal;
    this.#signal?.addEventListener("abort", this.#onAbort);
  }

  cancel(): void {
    if (!this.#ended) this.#fail(new GrpcError(STATUS.CANCELLED, "call cancelled"), true);
  }

  async *messages(): AsyncGenerator<Uint8Array> {
    for (;;) {
      const next = this.#queue.shift();
      if (next === undefined) {
        await new Promise<void>((resolve) => this.#wake = resolve);
        continue;
      }
      if (next.kind === "end") {
        if (next.error !== undefined) throw next.error;
        return;
      }
      this.#stream.release(next.wireBytes);
      if (this.#queue.length === 0) this.#releaseHeld();
      yield next.message;
    }
  }

  #push(delivery: Delivery): void {
    this.#queue.push(delivery);
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  #onHeaders(fields: HeaderField[], end: boolean): void {
    if (this.#ended) return;
    if (!this.#gotHeaders) {
      this.#gotHeaders = true;
      const httpStatus = Number(headerValue(fields, ":status"));
      const grpcStatus = parseStatusCode(headerValue(fields, "grpc-status"));
      if (httpStatus !== 200 && grpcStatus === undefined) {
        return this.#fail(
          new GrpcError(statusFromHttp(httpStatus), `The server answered HTTP ${httpStatus}`),
          true,
        );
      }
      const contentType = headerValue(fields, "content-type") ?? "";
      if (!end && !contentType.startsWith("application/grpc")) {
        return this.#fail(
          new GrpcError(
            STATUS.UNKNOWN,
            `The server answered content-type ${JSON.stringify(contentType)}`,
          ),
          true,
        );
      }
      if (!end) return;
    }
    this.#trailers(fields);
  }

  #trailers(fields: readonly HeaderField[]): void {
    const raw = headerValue(fields, "grpc-status");
    const message = decodeGrpcMessage(headerValue(fields, "grpc-message") ?? "");
    if (raw === undefined) {
      return this.#fail(
        new GrpcError(STATUS.INTERNAL, "The server ended the call without grpc-status"),
        false,
      );
    }
    // A code this side does not know is UNKNOWN, as gRPC says; the message stays.
    const code = parseStatusCode(raw) ?? STATUS.UNKNOWN;
    if (this.#reader.partial && code === STATUS.OK) {
      return this.#fail(
        new GrpcError(STATUS.INTERNAL, "The server ended the call inside a message"),
        false,
      );
    }
    this.#end(code === STATUS.OK ? undefined : new GrpcError(code, message), false);
  }

  #onData(chunk: Uint8Array, _end: boolean): void {
    if (this.#ended) return;
    this.#held += chunk.byteLength;
    try {
      this.#reader.push(chunk, (message) => {
        // Window credit goes back when the caller takes the message: the
        // bytes held so far ride on it, those of a next message's start included.
        this.#push({ kind: "message", message, wireBytes: this.#held });
        this.#held = 0;
      });
    } catch (err) {
      return this.#fail(err as GrpcError, true);
    }
    // A message larger than the window needs its parts released as they
    // arrive, but only while the caller keeps up: with messages waiting
    // unread, what is held stays held, so an unread call costs one window.
    if (this.#queue.length === 0) this.#releaseHeld();
  }

  #releaseHeld(): void {
    if (this.#held === 0) return;
    this.#stream.release(this.#held);
    this.#held = 0;
  }

  #onClose(code: number | undefined): void {
    if (this.#ended) return;
    if (code === H2_ERROR.REFUSED_STREAM) this.refused = true;
    const error = code === undefined
      ? new GrpcError(STATUS.INTERNAL, "The stream ended without trailers")
      : code === H2_ERROR.REFUSED_STREAM
      ? new GrpcError(STATUS.UNAVAILABLE, "The server refused the call (going away)")
      : code === H2_ERROR.CANCEL
      ? new GrpcError(STATUS.UNAVAILABLE, "The connection to the server was lost")
      : new GrpcError(STATUS.INTERNAL, `The server reset the call (HTTP/2 code ${code})`);
    this.#end(error, false);
  }

  #fail(error: GrpcError, reset: boolean): void {
    if (this.#ended) return;
    this.#end(error, reset);
  }

  #end(error: GrpcError | undefined, reset: boolean): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#cancelDeadline?.();
    this.#signal?.removeEventListener("abort", this.#onAbort);
    if (reset) this.#stream.reset(H2_ERROR.CANCEL);
    this.#push({ kind: "end", error });
  }
}
