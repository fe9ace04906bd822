/**
 * One gRPC call on the server, from its request headers to its trailers:
 * what a handler sees of it ({@linkcode ServerCall}, {@linkcode MessageSink})
 * and the state behind them ({@linkcode CallState}): the request message,
 * the deadline on the injected clock, cancellation, the responses and the
 * status. {@linkcode GrpcServer} routes a stream here once its headers say
 * it is a gRPC call.
 *
 * @module
 */

import { type CancelTimer, type Clock, systemClock } from "../clock.ts";
import { H2_ERROR } from "../h2/errors.ts";
import { encodeHeaderBlockWithoutIndexing, type HeaderField } from "../h2/hpack.ts";
import type { Http2Stream, StreamListener } from "../h2/stream.ts";
import { FramedMessage, frameMessage, MessageReader } from "./message_framing.ts";
import { encodeGrpcMessage, parseTimeout, readMetadata } from "./metadata.ts";
import { GrpcError, STATUS, type StatusCode } from "./status.ts";

/** What a handler knows about the call it serves. */
export interface ServerCall {
  /** The method path, `/package.Service/Method`. */
  readonly path: string;
  /** Aborted when the client cancels, the deadline passes or the connection ends; `reason` is a {@linkcode GrpcError}. */
  readonly signal: AbortSignal;
  /** Whether `signal` is aborted, without making the signal (most calls never need it). */
  readonly aborted: boolean;
  /** One object per client connection, to key per-connection state. */
  readonly connection: object;
  /**
   * @param key A metadata key (lower case).
   * @returns Every value sent under `key`; `-bin` keys give bytes.
   */
  metadata(key: string): readonly (string | Uint8Array)[];
}

/** Where a server-streaming handler writes its messages. */
export interface MessageSink {
  /**
   * Queues one message.
   *
   * @param message A serialized message, or one framed already.
   * @returns `undefined` when the stream's backlog is small (or the call is
   *   over); else a promise that resolves once it is small again (the
   *   client reads).
   */
  send(message: Uint8Array | FramedMessage): Promise<void> | undefined;
  /**
   * Queues framed messages, in order, as one item of the stream (a batch of
   * a watcher's events).
   *
   * @param messages The messages.
   * @returns As {@linkcode MessageSink.send}.
   */
  sendAll(messages: readonly FramedMessage[]): Promise<void> | undefined;
}

/** A method the server serves. */
export type MethodHandler =
  | {
    readonly kind: "unary";
    handle(request: Uint8Array, call: ServerCall): Promise<Uint8Array | FramedMessage>;
  }
  | {
    readonly kind: "serverStream";
    handle(request: Uint8Array, call: ServerCall, sink: MessageSink): Promise<void>;
  };

/** What a call reads of the server's options ({@linkcode GrpcServerOptions} holds them). */
export interface CallOptions {
  /** Methods by path. */
  readonly methods: ReadonlyMap<string, MethodHandler>;
  /** Largest request message, bytes. @default {65536} */
  readonly maxReceiveMessageBytes?: number;
  /** Largest response message, bytes. @default {268435456} */
  readonly maxSendMessageBytes?: number;
  /** A stream's unsent backlog at which `send` waits, bytes. @default {262144} */
  readonly streamHighWaterBytes?: number;
  /** Told when a handler throws something that is not a {@linkcode GrpcError}. */
  readonly observer?: { handlerError?(path: string, error: unknown): void };
  /** Runs the call's deadline. @default {systemClock} */
  readonly clock?: Clock;
}

/** The values of a metadata key a call does not carry. */
const NO_VALUES: readonly (string | Uint8Array)[] = Object.freeze([]);
/** The abort reason of a call that is over: one object, as an Error captures a stack when made. */
const CALL_ENDED = new GrpcError(STATUS.CANCELLED, "call ended");
/**
 * The abort reason of every call its client cancels: shared, as a new error
 * (its stack trace) per call was a measurable part of 100 watchers leaving.
 */
const CLIENT_CANCELLED = new GrpcError(STATUS.CANCELLED, "call cancelled by the client");
const OK_HEADERS = encodeHeaderBlockWithoutIndexing([
  [":status", "200"],
  ["content-type", "application/grpc"],
]);
const OK_TRAILERS = encodeHeaderBlockWithoutIndexing([["grpc-status", "0"]]);
/** What every successful call queues: made once, not per call. */
const OK_HEADERS_ITEM = Object.freeze({ block: OK_HEADERS });
const OK_TRAILERS_ITEM = Object.freeze({ block: OK_TRAILERS });

/**
 * @param code The call's status.
 * @param message Its message; none is sent when empty.
 * @returns The `grpc-status` (and `grpc-message`) fields of trailers.
 */
export function statusFields(code: StatusCode, message: string): HeaderField[] {
  const fields: HeaderField[] = [["grpc-status", String(code)]];
  if (message !== "") fields.push(["grpc-message", encodeGrpcMessage(message)]);
  return fields;
}

/** The request headers a call reads, found in one pass. */
export interface RequestHeaders {
  path: string;
  method: string | undefined;
  contentType: string;
  timeout: string | undefined;
  encoding: string | undefined;
  metadata: ReadonlyMap<string, readonly (string | Uint8Array)[]>;
}

/**
 * @param fields A request's header fields.
 * @returns What a call reads of them.
 */
export function readRequestHeaders(fields: readonly HeaderField[]): RequestHeaders {
  const out: RequestHeaders = {
    path: "",
    method: undefined,
    contentType: "",
    timeout: undefined,
    encoding: undefined,
    metadata: readMetadata(fields),
  };
  // The first value of each wins, as a lookup by name would give.
  let seen = 0;
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i]!;
    const name = field[0];
    if (name === ":path") {
      if ((seen & 1) === 0) out.path = field[1];
      seen |= 1;
    } else if (name === ":method") {
      if ((seen & 2) === 0) out.method = field[1];
      seen |= 2;
    } else if (name === "content-type") {
      if ((seen & 4) === 0) out.contentType = field[1];
      seen |= 4;
    } else if (name === "grpc-timeout") {
      if ((seen & 8) === 0) out.timeout = field[1];
      seen |= 8;
    } else if (name === "grpc-encoding") {
      if ((seen & 16) === 0) out.encoding = field[1];
      seen |= 16;
    }
  }
  return out;
}

/** One call from its request headers to its trailers. */
export class CallState implements ServerCall, StreamListener, MessageSink {
  readonly path: string;
  readonly connection: object;
  readonly #stream: Http2Stream;
  readonly #options: CallOptions;
  /** Made when someone asks for the signal: most unary calls never do. */
  #controller: AbortController | undefined;
  /** Why the call was aborted, once it was. */
  #abortReason: GrpcError | undefined;
  readonly #metadata: ReadonlyMap<string, readonly (string | Uint8Array)[]>;
  readonly #reader: MessageReader;
  readonly #timeoutMs: number | undefined;
  #request: Uint8Array | undefined;
  #messages = 0;
  #headersSent = false;
  #ended = false;
  #cancelDeadline: CancelTimer | undefined;

  constructor(
    stream: Http2Stream,
    request: RequestHeaders,
    connection: object,
    options: CallOptions,
  ) {
    this.#stream = stream;
    this.#options = options;
    this.connection = connection;
    this.path = request.path;
    this.#metadata = request.metadata;
    this.#reader = new MessageReader(options.maxReceiveMessageBytes ?? 64 * 1024);
    const timeout = request.timeout;
    this.#timeoutMs = timeout === undefined ? undefined : parseTimeout(timeout);
    if (timeout !== undefined && this.#timeoutMs === undefined) {
      this.#invalid = `Cannot parse grpc-timeout ${JSON.stringify(timeout.slice(0, 32))}`;
    }
    const encoding = request.encoding;
    if (encoding !== undefined && encoding !== "identity") {
      this.#unsupported = `Cannot decode grpc-encoding ${
        JSON.stringify(encoding.slice(0, 32))
      }: only identity is supported`;
    }
  }

  #invalid: string | undefined;
  #unsupported: string | undefined;

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#abortReason !== undefined) this.#controller.abort(this.#abortReason);
    }
    return this.#controller.signal;
  }

  get aborted(): boolean {
    return this.#abortReason !== undefined;
  }

  #abort(reason: GrpcError): void {
    if (this.#abortReason !== undefined) return;
    this.#abortReason = reason;
    this.#controller?.abort(reason);
  }

  metadata(key: string): readonly (string | Uint8Array)[] {
    return this.#metadata.get(key) ?? NO_VALUES;
  }

  start(endStream: boolean): void {
    // The call is its stream's listener: no closures per call.
    this.#stream.listener = this;
    if (this.#invalid !== undefined) return this.#finish(STATUS.INVALID_ARGUMENT, this.#invalid);
    if (this.#unsupported !== undefined) {
      return this.#finish(STATUS.UNIMPLEMENTED, this.#unsupported);
    }
    if (this.#timeoutMs !== undefined) {
      const clock = this.#options.clock ?? systemClock;
      this.#cancelDeadline = clock.setTimer(this.#timeoutMs, () => this.#deadline());
    }
    if (endStream) this.#requestComplete();
  }

  /**
   * The stream's listener: request DATA.
   *
   * @param chunk DATA bytes.
   * @param end Whether the request ended.
   */
  onData(chunk: Uint8Array, end: boolean): void {
    if (this.#ended) return;
    try {
      this.#reader.push(chunk, (message) => {
        this.#messages++;
        this.#request = message;
      });
      this.#stream.release(chunk.byteLength);
    } catch (err) {
      const e = err as GrpcError;
      return this.#finish(e.code, e.message);
    }
    if (this.#messages > 1) {
      return this.#finish(STATUS.INVALID_ARGUMENT, "Cannot take more than one request message");
    }
    if (end) this.#requestComplete();
  }

  #requestComplete(): void {
    if (this.#ended) return;
    if (this.#messages !== 1 || this.#reader.partial) {
      return this.#finish(
        STATUS.INVALID_ARGUMENT,
        this.#reader.partial
          ? "Cannot read a truncated request message"
          : "Cannot serve a call without its request message",
      );
    }
    const method = this.#options.methods.get(this.path);
    if (method === undefined) {
      return this.#finish(
        STATUS.UNIMPLEMENTED,
        `Unknown method ${JSON.stringify(this.path.slice(0, 200))}`,
      );
    }
    const request = this.#request!;
    this.#request = undefined;
    // One reaction per outcome, and the call its own sink: a unary call
    // makes no promise and no closure here beyond the two it hands `then`.
    let pending: Promise<Uint8Array | FramedMessage | void>;
    try {
      pending = method.kind === "unary"
        ? method.handle(request, this)
        : method.handle(request, this, this);
    } catch (err) {
      return this.#failed(err);
    }
    pending.then(
      (response) =>
        response === undefined ? this.#finish(STATUS.OK, "") : this.#respondUnary(response),
      (err: unknown) => this.#failed(err),
    );
  }

  /** Ends the call with the status of what its handler threw. */
  #failed(err: unknown): void {
    if (err instanceof GrpcError) return this.#finish(err.code, err.message);
    this.#options.observer?.handlerError?.(this.path, err);
    this.#finish(STATUS.INTERNAL, "internal error");
  }

  #respondUnary(response: Uint8Array | FramedMessage): void {
    if (this.#ended) return;
    const framed = response instanceof FramedMessage ? response : frameMessage(response);
    try {
      this.#checkSendSize(framed);
    } catch (err) {
      return this.#failed(err);
    }
    this.#sendHeaders();
    this.#sendFramed(framed);
    // The trailers now, so that headers, message and trailers leave in one write.
    this.#finish(STATUS.OK, "");
  }

  /**
   * The handler's sink: queues one message.
   *
   * @param message A serialized or framed message.
   * @returns As {@linkcode MessageSink.send}.
   */
  send(message: Uint8Array | FramedMessage): Promise<void> | undefined {
    if (this.#ended) return undefined;
    const framed = message instanceof FramedMessage ? message : frameMessage(message);
    this.#checkSendSize(framed);
    this.#sendHeaders();
    this.#sendFramed(framed);
    return this.#drained();
  }

  /**
   * The handler's sink: queues messages as one item.
   *
   * @param messages Framed messages.
   * @returns As {@linkcode MessageSink.send}.
   */
  sendAll(messages: readonly FramedMessage[]): Promise<void> | undefined {
    if (this.#ended) return undefined;
    for (let i = 0; i < messages.length; i++) this.#checkSendSize(messages[i]!);
    this.#sendHeaders();
    this.#stream.sendParts(messages);
    return this.#drained();
  }

  /** `undefined` while the stream's backlog is within its limit, else a wait for it to be. */
  #drained(): Promise<void> | undefined {
    return this.#stream.drained(this.#options.streamHighWaterBytes ?? 256 * 1024);
  }

  /** Queues a message: its head and tail are one item, written as one payload. */
  #sendFramed(framed: FramedMessage): void {
    this.#stream.sendData(framed.head, false, framed.tail);
  }

  #checkSendSize(framed: FramedMessage): void {
    const limit = this.#options.maxSendMessageBytes ?? 256 * 1024 * 1024;
    if (framed.messageBytes > limit) {
      throw new GrpcError(
        STATUS.RESOURCE_EXHAUSTED,
        `Cannot send a message of ${framed.messageBytes} bytes: the limit is ${limit}`,
      );
    }
  }

  #sendHeaders(): void {
    if (this.#headersSent) return;
    this.#headersSent = true;
    this.#stream.sendHeaders(OK_HEADERS_ITEM, false);
  }

  #deadline(): void {
    this.#cancelDeadline = undefined;
    this.#abort(new GrpcError(STATUS.DEADLINE_EXCEEDED, "deadline exceeded"));
    this.#finish(STATUS.DEADLINE_EXCEEDED, "Deadline exceeded");
  }

  /** Ends the call with a status: trailers, or Trailers-Only when nothing was sent. */
  #finish(code: StatusCode, message: string): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#cancelDeadline?.();
    if (!this.#stream.localOpen) return;
    if (code !== STATUS.OK) {
      // A reader that stopped reading will not take what is queued: the status goes first.
      this.#stream.discardUnsentData();
    }
    if (code === STATUS.OK && this.#headersSent) {
      this.#stream.sendHeaders(OK_TRAILERS_ITEM, true);
    } else if (this.#headersSent) {
      this.#stream.sendHeaders({ fields: statusFields(code, message) }, true);
    } else {
      this.#stream.sendHeaders({
        fields: [
          [":status", "200"],
          ["content-type", "application/grpc"],
          ...statusFields(code, message),
        ],
      }, true);
    }
    this.#abort(CALL_ENDED);
  }

  /**
   * The stream's listener: trailers from the client end its request.
   *
   * @param _trailers The fields (not read).
   * @param end Whether the request ended.
   */
  onHeaders(_trailers: HeaderField[], end: boolean): void {
    if (end) this.#requestComplete();
  }

  /**
   * The stream's listener: the stream is over.
   *
   * @param code The RST_STREAM code, `undefined` after a normal end.
   */
  onClose(code: number | undefined): void {
    this.#cancelDeadline?.();
    if (code === undefined || this.#abortReason !== undefined) {
      this.#abort(CALL_ENDED);
      this.#ended = true;
      return;
    }
    this.#ended = true;
    this.#abort(
      code === H2_ERROR.CANCEL || code === H2_ERROR.NO_ERROR
        ? CLIENT_CANCELLED
        : new GrpcError(STATUS.CANCELLED, `stream reset (HTTP/2 code ${code})`),
    );
  }
}
