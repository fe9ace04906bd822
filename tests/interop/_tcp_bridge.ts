/**
 * A loopback TCP listener that forwards each connection's bytes to a UNIX
 * socket and back, unchanged: for peers that only speak TCP (h2spec) when
 * the server under test listens on a UNIX socket only.
 *
 * @module
 */

/** A running bridge. */
export interface TcpBridge extends AsyncDisposable {
  /** The loopback port it listens on. */
  readonly port: number;
  /** Connections accepted so far. */
  readonly accepted: number;
}

async function pump(from: Deno.Conn, to: Deno.Conn): Promise<void> {
  const buf = new Uint8Array(64 * 1024);
  try {
    for (;;) {
      const n = await from.read(buf);
      if (n === null) break;
      let off = 0;
      while (off < n) off += await to.write(buf.subarray(off, n));
    }
    await to.closeWrite();
  } catch {
    // Either side went away: the caller closes both.
  }
}

function closeQuietly(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch {
    // already closed
  }
}

/**
 * Starts the bridge on 127.0.0.1, a free port.
 *
 * @param socketPath The UNIX socket every connection is forwarded to.
 * @returns The bridge; dispose it to stop listening and close every pair.
 */
export function startTcpBridge(socketPath: string): TcpBridge {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const pairs = new Set<Promise<void>>();
  const open = new Set<Deno.Conn>();
  let accepted = 0;
  const serving = (async () => {
    for await (const tcp of listener) {
      accepted++;
      open.add(tcp);
      const pair = (async () => {
        let unix: Deno.UnixConn | undefined;
        try {
          unix = await Deno.connect({ transport: "unix", path: socketPath });
          open.add(unix);
          await Promise.all([pump(tcp, unix), pump(unix, tcp)]);
        } catch {
          // The server refused: the peer sees its connection close.
        } finally {
          closeQuietly(tcp);
          open.delete(tcp);
          if (unix !== undefined) {
            closeQuietly(unix);
            open.delete(unix);
          }
        }
      })();
      pairs.add(pair);
      pair.finally(() => pairs.delete(pair));
    }
  })().catch(() => {});
  return {
    port: (listener.addr as Deno.NetAddr).port,
    get accepted() {
      return accepted;
    },
    async [Symbol.asyncDispose]() {
      listener.close();
      await serving;
      for (const conn of open) closeQuietly(conn);
      await Promise.all(pairs);
    },
  };
}
