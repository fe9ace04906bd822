/**
 * The daemon's HTTP/1.1 server for its TCP listeners (the HTTP API and the
 * metrics port), on an accept loop of its own because `Deno.serve` ends the
 * process on EMFILE and has no connection cap or timeouts. It keeps Go's
 * `http.Server` rules:
 *
 * - at most `maxConnections` at once; the rest are closed as accepted
 *   (`AcceptLoop`, which also survives every accept error);
 * - a TLS handshake deadline; a deadline to read the request head and body
 *   (slowloris); an idle keep-alive deadline between requests; a deadline on
 *   every write, so a client that stops reading lets its slot go;
 * - a streamed response (a watch, {@linkcode streamingResponse}) has no
 *   deadline of its own: it ends when its body ends, when the client closes,
 *   or when a write stalls. It is sent chunked and its connection closes
 *   after it.
 *
 * Handlers are the web's `(Request) => Response`, as `Deno.serve` takes them;
 * a large body made per request goes through `textResponse` (text_body.ts).
 *
 * @module
 */

import { concatBytes } from "../bytes_concat.ts";
import { type Clock, systemClock } from "../clock.ts";
import { AcceptLoop, type AcceptObserver, closeQuietly } from "../listen/accept_loop.ts";
import type { Logger } from "../log.ts";
import { clockSleep } from "../sleep.ts";
import { DeadlineSweep, type Expiring, tickFor } from "./deadlines.ts";
import { headEnd, parseRequestHead, type RequestHead, RequestHeadError } from "./request_head.ts";
import { type BodyFraming, chunk, LAST_CHUNK, plainError, responseHead } from "./response_head.ts";
import { TextBodyEncoder, textBodyOf } from "./text_body.ts";
import { acceptTls, type ByteConn } from "./tls_conn.ts";

/** The deadlines of a connection, as counted when one cuts it. */
export type Deadline = "tls_handshake" | "read_header" | "idle" | "write";

/** Deadlines, ms; `Infinity` turns one off. */
export interface Http1Timeouts {
  /** From accept to the end of the TLS handshake. */
  readonly tlsHandshakeMs: number;
  /** From the first byte of a request (or the accept, for the first) to the end of its body. */
  readonly readHeaderMs: number;
  /** Between a response and the first byte of the next request. */
  readonly idleMs: number;
  /** For each write of a response. */
  readonly writeMs: number;
}

/** What the server reports besides the accept loop's refusals. */
export interface Http1Observer extends AcceptObserver {
  /** A connection closed because a deadline passed. */
  timedOut(deadline: Deadline): void;
}

/** What a handler learns of its request besides the request itself. */
export interface RequestInfo {
  readonly remoteAddr: Deno.NetAddr;
  /** Settles when the response is sent in full or the connection is gone. */
  readonly completed: Promise<void>;
}

/** Serves one request. */
export type Http1Handler = (request: Request, info: RequestInfo) => Response | Promise<Response>;

/** Options of {@linkcode serveHttp1}. */
export interface Http1ServerOptions {
  readonly hostname: string;
  /** 0 picks a free port. */
  readonly port: number;
  /** PEM certificate chain and key: serve HTTPS. */
  readonly tls?: { readonly cert: string; readonly key: string };
  /** The listener's name in logs and metrics. */
  readonly name: string;
  readonly maxConnections: number;
  readonly timeouts: Http1Timeouts;
  /** Largest request body, bytes. @default {65536} */
  readonly maxBodyBytes?: number;
  readonly observer: Http1Observer;
  readonly log: Logger;
  /** Deadlines and accept back-off run on it. @default {systemClock} */
  readonly clock?: Clock;
  /** The response for a handler that threw. */
  readonly onError: (error: unknown) => Response;
}

/** A running server. */
export interface RunningHttp1Server {
  readonly addr: Deno.NetAddr;
  /** Connections open now. */
  readonly openConnections: number;
  /**
   * Stops accepting, closes idle connections, lets responses in progress
   * finish for up to `graceMs`, then closes the rest.
   */
  close(graceMs?: number): Promise<void>;
}

const STREAMING = new WeakSet<Response>();

/**
 * Marks a response whose body is a stream of unknown length (a watch): it
 * is sent chunked as its body yields, with no deadline but the per-write one.
 *
 * @param response The response.
 * @returns The same response.
 */
export function streamingResponse(response: Response): Response {
  STREAMING.add(response);
  return response;
}

/**
 * Binds and starts serving.
 *
 * @param options Address, TLS, limits, deadlines, observer and log.
 * @param handler Serves each request.
 * @returns The running server.
 * @throws {Error} When the address cannot be bound.
 */
export function serveHttp1(options: Http1ServerOptions, handler: Http1Handler): RunningHttp1Server {
  // TLS runs over connections accepted here, not on `Deno.listenTls` (see tls_conn.ts).
  const listener = Deno.listen({ hostname: options.hostname, port: options.port });
  const clock = options.clock ?? systemClock;
  const t = options.timeouts;
  const deadlines = new DeadlineSweep(
    clock,
    tickFor(Math.min(t.tlsHandshakeMs, t.readHeaderMs, t.idleMs, t.writeMs)),
  );
  const loop = new AcceptLoop(listener, {
    name: options.name,
    maxConnections: options.maxConnections,
    observer: options.observer,
    log: options.log,
    sleep: clockSleep(clock),
  });
  const connections = new Set<Http1Connection>();
  const encoder = new TextBodyEncoder();
  const accepting = loop.run(async (conn) => {
    // Each response is one write: Nagle's wait for an ACK would only delay its tail.
    (conn as Deno.TcpConn).setNoDelay(true);
    const connection = new Http1Connection(conn, options, deadlines, encoder, handler);
    connections.add(connection);
    try {
      await connection.run();
    } finally {
      connections.delete(connection);
    }
  });
  const addr = listener.addr as Deno.NetAddr;
  let closing: Promise<void> | undefined;
  return {
    addr,
    get openConnections() {
      return loop.open;
    },
    close(graceMs = 5000) {
      return closing ??= (async () => {
        loop.close();
        await accepting;
        for (const c of connections) c.closeWhenIdle();
        const done = Promise.all([...connections].map((c) => c.done));
        let cancel = () => {};
        const timeout = new Promise<void>((resolve) => cancel = clock.setTimer(graceMs, resolve));
        await Promise.race([done, timeout]);
        cancel();
        // A write stuck on a client that does not read is not waited for.
        for (const c of connections) c.close();
        deadlines.stop();
      })();
    },
  };
}

const FIRST_BUFFER = 4096;

/** Largest request head, bytes. */
const MAX_HEAD_BYTES = 65536;

/** One client connection: requests read, handled and answered in turn. */
class Http1Connection implements Expiring {
  #conn: ByteConn;
  readonly #options: Http1ServerOptions;
  readonly #deadlines: DeadlineSweep;
  /** The server's, shared by its connections. */
  readonly #encoder: TextBodyEncoder;
  /** The deadline armed, for the count when it expires. */
  #deadline: Deadline = "read_header";
  readonly #handler: Http1Handler;
  readonly #done = Promise.withResolvers<void>();
  #buf: Uint8Array<ArrayBuffer> = new Uint8Array(FIRST_BUFFER);
  #filled = 0;
  #closed = false;
  #busy = false;
  #closeWhenIdle = false;
  /** Ends the body being streamed, if any. */
  #onClose: (() => void) | undefined;

  constructor(
    conn: Deno.Conn,
    options: Http1ServerOptions,
    deadlines: DeadlineSweep,
    encoder: TextBodyEncoder,
    handler: Http1Handler,
  ) {
    this.#conn = conn;
    this.#options = options;
    this.#deadlines = deadlines;
    this.#encoder = encoder;
    this.#handler = handler;
  }

  /** Settles when the connection is closed. */
  get done(): Promise<void> {
    return this.#done.promise;
  }

  /** Closes now if no request is in progress, else after its response. */
  closeWhenIdle(): void {
    this.#closeWhenIdle = true;
    if (!this.#busy) this.close();
  }

  /**
   * Closes the connection and ends the response being streamed. A write in
   * flight keeps the socket (Deno cannot cancel it) until the client reads
   * or goes, and keeps its slot until then: the cap stays a bound on
   * descriptors.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#deadlines.disarm(this);
    closeQuietly(this.#conn);
    this.#onClose?.();
  }

  async run(): Promise<void> {
    try {
      await this.#serve();
    } catch {
      // A reset, a closed socket or a failed handshake: the connection is over either way.
    } finally {
      this.close();
      this.#done.resolve();
    }
  }

  async #serve(): Promise<void> {
    const t = this.#options.timeouts;
    if (this.#options.tls !== undefined) {
      this.#arm(t.tlsHandshakeMs, "tls_handshake");
      const tls = await acceptTls(this.#conn as Deno.Conn, this.#options.tls);
      this.#conn = tls;
      // The deadline may have passed while Node's TLS module loaded: it closed the TCP socket.
      if (this.#closed) tls.close();
      await tls.handshake();
      this.#disarm();
    }
    for (let first = true;; first = false) {
      if (this.#closeWhenIdle) return;
      if (!first && this.#filled === 0) {
        this.#arm(t.idleMs, "idle");
        if (!await this.#fill()) return;
      }
      this.#arm(t.readHeaderMs, "read_header");
      const request = await this.#readRequest();
      if (request === undefined || this.#closed) return;
      this.#disarm();
      // From here to its response's end the request is in progress: close() lets it finish.
      this.#busy = true;
      const keepAlive = await this.#respond(request.head, request.body);
      this.#busy = false;
      if (!keepAlive) return;
    }
  }

  /** Reads one request head and body; answers and returns nothing when it cannot be served. */
  async #readRequest(): Promise<
    { head: RequestHead; body: Uint8Array<ArrayBuffer> | undefined } | undefined
  > {
    let end = headEnd(this.#buf, this.#filled);
    while (end < 0) {
      if (this.#filled > MAX_HEAD_BYTES) {
        await this.#refuse(431, "request header fields too large");
        return undefined;
      }
      const from = this.#filled;
      if (!await this.#fill()) return undefined;
      end = headEnd(this.#buf, this.#filled, from - 3);
    }
    if (end > MAX_HEAD_BYTES) {
      await this.#refuse(431, "request header fields too large");
      return undefined;
    }
    let head: RequestHead;
    try {
      head = parseRequestHead(this.#buf.subarray(0, end));
    } catch (err) {
      if (!(err instanceof RequestHeadError)) throw err;
      await this.#refuse(err.status, err.message);
      return undefined;
    }
    if (head.contentLength > (this.#options.maxBodyBytes ?? 65536)) {
      await this.#refuse(413, "request body too large");
      return undefined;
    }
    while (this.#filled < end + head.contentLength) {
      if (!await this.#fill()) return undefined;
    }
    const body = head.contentLength === 0
      ? undefined
      : this.#buf.slice(end, end + head.contentLength);
    this.#consume(end + head.contentLength);
    return { head, body };
  }

  /** Calls the handler and writes its response; returns whether the connection stays open. */
  async #respond(head: RequestHead, body: Uint8Array<ArrayBuffer> | undefined): Promise<boolean> {
    const completed = Promise.withResolvers<void>();
    try {
      let request: Request;
      try {
        request = this.#request(head, body);
      } catch (err) {
        await this.#refuse(400, `cannot read the request: ${(err as Error).message}`);
        return false;
      }
      const info: RequestInfo = {
        remoteAddr: this.#conn.remoteAddr as Deno.NetAddr,
        completed: completed.promise,
      };
      let response: Response;
      try {
        response = await this.#handler(request, info);
      } catch (err) {
        response = this.#options.onError(err);
      }
      const keepAlive = head.keepAlive && !this.#closeWhenIdle;
      if (STREAMING.has(response)) {
        if (head.method !== "HEAD") {
          await this.#stream(response, head);
          return false;
        }
        await response.body?.cancel();
        await this.#write(
          responseHead(response.status, response.headers, { kind: "close" }, false),
        );
        return false;
      }
      const noBody = head.method === "HEAD" || response.status === 204 ||
        response.status === 304;
      const parts = noBody ? undefined : textBodyOf(response);
      if (parts !== undefined) {
        const encoded = this.#encoder.encode(
          parts,
          (length) =>
            responseHead(response.status, response.headers, { kind: "length", length }, keepAlive),
        );
        try {
          await this.#write(encoded.bytes);
        } finally {
          encoded.release();
        }
        return keepAlive;
      }
      const bytes = await response.arrayBuffer().then((b) => new Uint8Array(b), () => undefined);
      if (bytes === undefined) {
        const error = this.#options.onError(new Error("the response body failed"));
        await this.#write(plainError(error.status, await error.text()));
        return false;
      }
      const out = responseHead(
        response.status,
        response.headers,
        { kind: "length", length: response.status === 204 ? 0 : bytes.length },
        keepAlive,
      );
      await this.#write(noBody ? out : concatBytes([out, bytes]));
      return keepAlive;
    } finally {
      completed.resolve();
    }
  }

  #request(head: RequestHead, body: Uint8Array<ArrayBuffer> | undefined): Request {
    const scheme = this.#options.tls === undefined ? "http" : "https";
    let url: string;
    if (head.target.startsWith("/")) {
      const host = head.fields.find(([name]) => name === "host")?.[1] ||
        `${this.#options.hostname}:${(this.#conn.localAddr as Deno.NetAddr).port}`;
      url = `${scheme}://${host}${head.target}`;
    } else if (/^https?:\/\//i.test(head.target)) {
      url = head.target;
    } else {
      throw new TypeError(`the request target "${head.target}" is not served`);
    }
    const method = head.method;
    const withBody = body !== undefined && method !== "GET" && method !== "HEAD";
    return new Request(new URL(url), {
      method,
      headers: new Headers(head.fields as [string, string][]),
      ...(withBody ? { body } : {}),
    });
  }

  /** Sends a streamed body chunked (HTTP/1.0: until close), ending when it does or the client goes. */
  async #stream(response: Response, head: RequestHead): Promise<void> {
    const framing: BodyFraming = head.minor === 1 ? { kind: "chunked" } : { kind: "close" };
    const reader = response.body?.getReader();
    await this.#write(responseHead(response.status, response.headers, framing, false));
    if (reader === undefined) {
      if (framing.kind === "chunked") await this.#write(LAST_CHUNK);
      return;
    }
    this.#onClose = () => void reader.cancel().catch(() => {});
    // The client closing is seen only by reading: what it sends meanwhile is not wanted.
    const gone = this.#untilClosed().then(() => reader.cancel().catch(() => {}));
    try {
      for (;;) {
        const next = await reader.read();
        if (next.done || this.#closed) break;
        if (next.value.length === 0) continue;
        await this.#write(framing.kind === "chunked" ? chunk(next.value) : next.value);
      }
      if (framing.kind === "chunked" && !this.#closed) await this.#write(LAST_CHUNK);
    } finally {
      reader.cancel().catch(() => {});
      this.close();
      await gone;
    }
  }

  async #untilClosed(): Promise<void> {
    const scratch = new Uint8Array(512);
    for (;;) {
      const n = await this.#conn.read(scratch).catch(() => null);
      if (n === null || this.#closed) return;
    }
  }

  /** Answers an error of the server's own and ends the connection. */
  async #refuse(status: number, message: string): Promise<void> {
    this.#disarm();
    await this.#write(plainError(status, message));
  }

  /** Writes all of `bytes` within the write deadline. */
  async #write(bytes: Uint8Array): Promise<void> {
    this.#arm(this.#options.timeouts.writeMs, "write");
    let off = 0;
    while (off < bytes.length) off += await this.#conn.write(bytes.subarray(off));
    this.#disarm();
  }

  /** Reads more; false at the end of the stream (or a closed connection). */
  async #fill(): Promise<boolean> {
    const limit = MAX_HEAD_BYTES + (this.#options.maxBodyBytes ?? 65536) +
      1;
    if (this.#filled === this.#buf.length) {
      if (this.#buf.length >= limit) return false;
      const bigger = new Uint8Array(Math.min(limit, this.#buf.length * 2));
      bigger.set(this.#buf.subarray(0, this.#filled));
      this.#buf = bigger;
    }
    const n = await this.#conn.read(this.#buf.subarray(this.#filled));
    if (n === null || this.#closed) return false;
    this.#filled += n;
    return true;
  }

  /** Drops the first `n` bytes read (one request); a large buffer is not kept for the next. */
  #consume(n: number): void {
    const rest = this.#buf.subarray(n, this.#filled);
    if (this.#buf.length > FIRST_BUFFER && rest.length <= FIRST_BUFFER) {
      const small = new Uint8Array(FIRST_BUFFER);
      small.set(rest);
      this.#buf = small;
    } else {
      this.#buf.copyWithin(0, n, this.#filled);
    }
    this.#filled = rest.length;
  }

  #arm(ms: number, deadline: Deadline): void {
    this.#deadline = deadline;
    this.#deadlines.arm(this, ms);
  }

  #disarm(): void {
    this.#deadlines.disarm(this);
  }

  /** The armed deadline passed: counted, and the connection closed. */
  expire(): void {
    if (this.#closed) return;
    this.#options.observer.timedOut(this.#deadline);
    this.close();
  }
}
