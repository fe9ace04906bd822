/**
 * A test HTTP(S) server on a free port of 127.0.0.1 (the fake kubelet, the
 * fake API server).
 *
 * @module
 */

/** A running local server. */
export interface LocalServer {
  /** `http://127.0.0.1:PORT`, or `https://` with a certificate. */
  readonly url: string;
  readonly server: Deno.HttpServer;
}

/**
 * Serves `handler` on 127.0.0.1, over TLS when a certificate and key are given.
 *
 * @param handler The request handler.
 * @param tls PEM certificate and key; neither: plain HTTP.
 * @returns The URL and the server (shut it down when done).
 */
export function serveLocal(
  handler: Deno.ServeHandler,
  tls: { cert?: string | undefined; key?: string | undefined } = {},
): Promise<LocalServer> {
  const secure = tls.cert !== undefined && tls.key !== undefined;
  return new Promise((resolve) => {
    const server: Deno.HttpServer = Deno.serve({
      hostname: "127.0.0.1",
      port: 0,
      ...(secure ? { cert: tls.cert!, key: tls.key! } : {}),
      onListen: ({ port }) =>
        queueMicrotask(() =>
          resolve({ url: `${secure ? "https" : "http"}://127.0.0.1:${port}`, server })
        ),
    }, handler);
  });
}
