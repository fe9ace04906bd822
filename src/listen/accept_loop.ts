/**
 * The one accept loop of every listener the daemon serves (the API socket,
 * the HTTP API, the metrics port): at most `maxConnections` open at once, a
 * connection past the cap closed at once and counted, and no accept error
 * fatal. Out of descriptors or memory (EMFILE, ENFILE, ENOMEM, ...) the loop
 * logs once per burst, counts every failure and waits before it accepts
 * again, from 5 ms doubling up to 1 s, as Go's `http.Server` does on a
 * temporary accept error. It ends only when its listener is closed.
 *
 * @module
 */

import { Backoff } from "../backoff.ts";
import type { Logger } from "../log.ts";
import type { Sleep } from "../sleep.ts";

/** Why a connection was closed as soon as it was accepted. */
export type RefusalReason = "limit" | "shutting_down";

/** What the loop reports; the caller counts it in its metrics. */
export interface AcceptObserver {
  /** A connection accepted and closed at once. */
  refused(reason: RefusalReason): void;
  /** An accept that failed, by the error's code (`EMFILE`, `ENFILE`, `ENOMEM`, or its name). */
  acceptFailed(code: string): void;
}

/** Options of {@linkcode AcceptLoop}. */
export interface AcceptLoopOptions {
  /** The listener's name in logs: `socket`, `http-api`, `metrics`. */
  readonly name: string;
  /** Connections open at once; one more is closed as soon as it is accepted. */
  readonly maxConnections: number;
  /**
   * The connections counted against the cap, when several listeners share
   * one (a server's sockets). @default {this loop's own}
   */
  readonly openConnections?: () => number;
  readonly observer: AcceptObserver;
  readonly log: Logger;
  /** Waits between failed accepts (5 ms doubling to 1 s; a fake clock's in tests). */
  readonly sleep: Sleep;
}

/** The code of an accept error: Deno's `code` (`EMFILE`), else its name. */
function errorCode(err: unknown): string {
  const code = (err as { code?: unknown }).code;
  if (typeof code === "string" && code !== "") return code;
  return err instanceof Error ? err.name : "unknown";
}

/**
 * Accepts from one listener and hands each connection to `serve`, whose
 * promise settles when that connection is over.
 *
 * @example Usage
 * ```ts ignore
 * const loop = new AcceptLoop(Deno.listen({ port: 0 }), options);
 * const done = loop.run((conn) => serveOne(conn));
 * loop.close();
 * await done;
 * ```
 */
export class AcceptLoop {
  readonly #listener: Deno.Listener;
  readonly #options: AcceptLoopOptions;
  readonly #stop = new AbortController();
  #open = 0;
  #draining = false;

  /**
   * @param listener A TCP, TLS or UNIX listener; the loop closes it when closed.
   * @param options Cap, observer, log and sleep.
   * @throws {RangeError} When `maxConnections` is not a positive integer.
   */
  constructor(listener: Deno.Listener, options: AcceptLoopOptions) {
    if (!Number.isInteger(options.maxConnections) || options.maxConnections < 1) {
      throw new RangeError(
        `Cannot cap connections at "${options.maxConnections}": use a positive integer`,
      );
    }
    this.#listener = listener;
    this.#options = options;
  }

  /** Connections handed to `serve` whose promise has not settled yet. */
  get open(): number {
    return this.#open;
  }

  /** The listener's address. */
  get addr(): Deno.Addr {
    return this.#listener.addr;
  }

  /**
   * From now on every accepted connection is refused as `shutting_down`
   * (the listener stays open until {@linkcode AcceptLoop.close}).
   */
  drain(): void {
    this.#draining = true;
  }

  /**
   * Accepts until the listener is closed.
   *
   * @param serve Serves one connection; its promise settles when the connection is done.
   * @returns Settles when the listener is closed; never rejects.
   */
  async run(serve: (conn: Deno.Conn) => Promise<void>): Promise<void> {
    const { log, observer, sleep, name } = this.#options;
    // Failed accepts in a row, and the wait after each.
    const retry = new Backoff({ initialMs: 5, maxMs: 1000, jitter: 0 });
    while (!this.#stop.signal.aborted) {
      let conn: Deno.Conn;
      try {
        conn = await this.#listener.accept();
      } catch (err) {
        if (this.#stop.signal.aborted || err instanceof Deno.errors.BadResource) return;
        const code = errorCode(err);
        observer.acceptFailed(code);
        if (retry.attempts === 0) {
          log.warn("cannot accept connections; retrying", { listener: name, code, error: err });
        }
        await sleep(retry.next(), this.#stop.signal);
        continue;
      }
      if (retry.attempts > 0) {
        log.info("accepting connections again", { listener: name, failedAccepts: retry.attempts });
        retry.reset();
      }
      const open = this.#options.openConnections?.() ?? this.#open;
      if (this.#draining || open >= this.#options.maxConnections) {
        observer.refused(this.#draining ? "shutting_down" : "limit");
        closeQuietly(conn);
        continue;
      }
      this.#open++;
      serve(conn).catch((err) => log.error("connection failed", { listener: name, error: err }))
        .finally(() => this.#open--);
    }
  }

  /** Stops accepting and closes the listener; open connections are the caller's. */
  close(): void {
    if (this.#stop.signal.aborted) return;
    this.#stop.abort();
    closeQuietly(this.#listener);
  }
}

/** Closes a connection or listener that may be closed already. */
export function closeQuietly(resource: { close(): void }): void {
  try {
    resource.close();
  } catch {
    // Closed already.
  }
}
