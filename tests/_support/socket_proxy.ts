/**
 * A UNIX socket (or TCP port) proxy a test can cut: every byte passes through unchanged
 * until `cut()` closes every connection at once (as a network blip or a
 * daemon's crash does to its clients), and `pause()` turns new connections
 * away until `resume()`.
 *
 * @module
 */

/** A running proxy. */
export interface SocketProxy extends AsyncDisposable {
  /** The socket clients connect to. */
  readonly path: string;
  /** Connections accepted so far. */
  readonly accepted: number;
  /** Closes every open connection, both sides. */
  cut(): void;
  /** Closes new connections at once until {@linkcode SocketProxy.resume}. */
  pause(): void;
  resume(): void;
}

async function pump(from: Deno.Conn, to: Deno.Conn): Promise<void> {
  const buf = new Uint8Array(64 * 1024);
  try {
    for (;;) {
      const n = await from.read(buf);
      if (n === null) break;
      let view = buf.subarray(0, n);
      while (view.length > 0) view = view.subarray(await to.write(view));
    }
  } catch {
    // Cut or closed by the other side.
  }
}

/**
 * Starts a proxy from `path` to `target`.
 *
 * @param path Where to listen.
 * @param target The socket to forward to.
 * @returns The proxy; dispose it to stop.
 */
export function startSocketProxy(path: string, target: string): SocketProxy {
  const listener = Deno.listen({ transport: "unix", path });
  return proxy(listener, () => Deno.connect({ transport: "unix", path: target }), {
    path,
    cleanup: () => Deno.remove(path).catch(() => {}),
  });
}

/**
 * Starts a proxy from a free port of 127.0.0.1 to a TCP port there (an HTTP
 * server a test wants to cut off from its clients).
 * @param targetPort The port to forward to.
 * @returns The proxy and its port; dispose it to stop.
 */
export function startTcpProxy(targetPort: number): SocketProxy & { readonly port: number } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const running = proxy(listener, () => Deno.connect({ hostname: "127.0.0.1", port: targetPort }), {
    path: `127.0.0.1:${port}`,
    cleanup: () => Promise.resolve(),
  });
  return Object.assign(running, { port });
}

function proxy(
  listener: Deno.Listener,
  dial: () => Promise<Deno.Conn>,
  where: { path: string; cleanup: () => Promise<void> },
): SocketProxy {
  const path = where.path;
  const open = new Set<Deno.Conn>();
  const tasks = new Set<Promise<void>>();
  let paused = false;
  let accepted = 0;
  const closeConn = (c: Deno.Conn) => {
    if (!open.delete(c)) return;
    try {
      c.close();
    } catch {
      // Already closed.
    }
  };
  const serve = async (client: Deno.Conn) => {
    open.add(client);
    if (paused) return closeConn(client);
    let upstream: Deno.Conn;
    try {
      upstream = await dial();
    } catch {
      return closeConn(client);
    }
    open.add(upstream);
    await Promise.race([pump(client, upstream), pump(upstream, client)]);
    closeConn(client);
    closeConn(upstream);
  };
  const acceptLoop = (async () => {
    try {
      for await (const conn of listener) {
        accepted++;
        const task = serve(conn);
        tasks.add(task);
        task.finally(() => tasks.delete(task));
      }
    } catch {
      // Listener closed.
    }
  })();
  return {
    path,
    get accepted() {
      return accepted;
    },
    cut() {
      for (const c of [...open]) closeConn(c);
    },
    pause() {
      paused = true;
    },
    resume() {
      paused = false;
    },
    async [Symbol.asyncDispose]() {
      listener.close();
      await acceptLoop;
      for (const c of [...open]) closeConn(c);
      await Promise.all([...tasks]);
      await where.cleanup();
    },
  };
}
