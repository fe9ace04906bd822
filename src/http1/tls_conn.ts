/**
 * The server side of TLS over a TCP connection the daemon accepted itself.
 *
 * Why not `Deno.listenTls`: in Deno 2.9.3 a `TlsConn` closed before its
 * handshake ends keeps its descriptor until the client sends or closes (its
 * handshake task holds the socket), so a client that connects and stays
 * silent would hold a descriptor past every deadline. Here the TCP socket is
 * ours: a deadline closes it, and the descriptor goes with it. The TLS itself
 * is Deno's (`node:tls` over a stream), with the same certificates.
 *
 * `node:tls` and `node:stream` are imported when the first TLS connection
 * comes, not with the daemon: they start Deno's Node compatibility layer,
 * which a daemon without HTTPS does not pay for.
 *
 * @module
 */

import type { Duplex } from "node:stream";
import type { TLSSocket } from "node:tls";

/** The two Node classes TLS needs. */
interface NodeTls {
  readonly Duplex: typeof Duplex;
  readonly TLSSocket: typeof TLSSocket;
}

let nodeTls: Promise<NodeTls> | undefined;

function loadNodeTls(): Promise<NodeTls> {
  return nodeTls ??= Promise.all([import("node:stream"), import("node:tls")]).then((
    [stream, tls],
  ) => ({ Duplex: stream.Duplex, TLSSocket: tls.TLSSocket }));
}

/**
 * Starts the server side of TLS on an accepted connection.
 *
 * @param conn The accepted TCP connection.
 * @param tls PEM certificate chain and key.
 * @returns The connection; {@linkcode TlsServerConn.handshake} says when it is usable.
 */
export async function acceptTls(
  conn: Deno.Conn,
  tls: { readonly cert: string; readonly key: string },
): Promise<TlsServerConn> {
  return new TlsServerConn(conn, tls, await loadNodeTls());
}

/** What the HTTP/1.1 server reads and writes: a plain `Deno.Conn` or a TLS one. */
export interface ByteConn {
  read(buf: Uint8Array): Promise<number | null>;
  write(bytes: Uint8Array): Promise<number>;
  close(): void;
  readonly remoteAddr: Deno.Addr;
  readonly localAddr: Deno.Addr;
}

/** Bytes a TLS connection buffers from its client before it stops reading the socket. */
const HIGH_WATER = 64 * 1024;

/** A `Deno.Conn` as the stream `node:tls` reads ciphertext from and writes it to. */
function ciphertextStream(conn: Deno.Conn, node: NodeTls): Duplex {
  return new node.Duplex({
    read() {
      const buf = new Uint8Array(16 * 1024);
      conn.read(buf).then(
        (n) => this.push(n === null ? null : buf.subarray(0, n)),
        (err) => this.destroy(err),
      );
    },
    write(chunk: Uint8Array, _encoding: string, callback: (err?: Error | null) => void) {
      writeAll(conn, chunk).then(() => callback(), callback);
    },
    final(callback: () => void) {
      conn.closeWrite().then(() => callback(), () => callback());
    },
    destroy(err: Error | null, callback: (err: Error | null) => void) {
      try {
        conn.close();
      } catch {
        // Closed already.
      }
      callback(err);
    },
  });
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let off = 0;
  while (off < bytes.length) off += await conn.write(bytes.subarray(off));
}

/** A TLS server connection over an accepted TCP connection. */
export class TlsServerConn implements ByteConn {
  readonly remoteAddr: Deno.Addr;
  readonly localAddr: Deno.Addr;
  readonly #socket: TLSSocket;
  readonly #conn: Deno.Conn;
  readonly #secure = Promise.withResolvers<void>();
  #chunks: Uint8Array[] = [];
  #buffered = 0;
  #ended = false;
  #wake: (() => void) | undefined;

  /**
   * Starts the handshake; {@linkcode TlsServerConn.handshake} says when it is over.
   *
   * @param conn The accepted TCP connection; closing this closes it.
   * @param tls PEM certificate chain and key.
   * @param node The Node classes (see {@linkcode acceptTls}).
   */
  constructor(
    conn: Deno.Conn,
    tls: { readonly cert: string; readonly key: string },
    node: NodeTls,
  ) {
    this.#conn = conn;
    this.remoteAddr = conn.remoteAddr;
    this.localAddr = conn.localAddr;
    const socket = new node.TLSSocket(ciphertextStream(conn, node), {
      isServer: true,
      cert: tls.cert,
      key: tls.key,
      ALPNProtocols: ["http/1.1"],
    });
    this.#socket = socket;
    // Nothing waits on it when the connection fails before anyone asks.
    this.#secure.promise.catch(() => {});
    socket.on("secure", () => this.#secure.resolve());
    socket.on("data", (data: Uint8Array) => {
      this.#chunks.push(data);
      this.#buffered += data.length;
      if (this.#buffered >= HIGH_WATER) socket.pause();
      this.#notify();
    });
    const end = (err?: Error) => {
      this.#ended = true;
      this.#secure.reject(err ?? new Deno.errors.UnexpectedEof("closed during the TLS handshake"));
      this.#notify();
    };
    socket.on("end", () => end());
    socket.on("close", () => end());
    socket.on("error", (err: Error) => end(err));
  }

  /** @returns Settles when the handshake is over; rejects if the connection ends first. */
  handshake(): Promise<void> {
    return this.#secure.promise;
  }

  async read(buf: Uint8Array): Promise<number | null> {
    while (this.#chunks.length === 0 && !this.#ended) {
      await new Promise<void>((resolve) => this.#wake = resolve);
    }
    const first = this.#chunks[0];
    if (first === undefined) return null;
    const n = Math.min(buf.length, first.length);
    buf.set(first.subarray(0, n));
    if (n === first.length) this.#chunks.shift();
    else this.#chunks[0] = first.subarray(n);
    this.#buffered -= n;
    if (this.#buffered < HIGH_WATER && this.#socket.isPaused()) this.#socket.resume();
    return n;
  }

  write(bytes: Uint8Array): Promise<number> {
    return new Promise((resolve, reject) => {
      this.#socket.write(bytes, (err) => err ? reject(err) : resolve(bytes.length));
    });
  }

  close(): void {
    this.#socket.destroy();
    // The descriptor goes now, whatever the TLS layer still has in flight.
    try {
      this.#conn.close();
    } catch {
      // Closed already.
    }
    this.#ended = true;
    this.#notify();
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}
