/**
 * The HTTP side: `/metrics` (Prometheus text), `/healthz` (process alive)
 * and `/readyz` (sync gate open and sources fresh), bound to localhost by
 * default.
 *
 * @module
 */

import type { Logger } from "../log.ts";
import type { MetricsRegistry } from "./registry.ts";

/** Readiness as the daemon judges it. */
export interface Readiness {
  /** @returns Reasons the daemon is not ready; empty when ready. */
  notReadyReasons(): readonly string[];
  /** @returns Problems that do not make the daemon not ready (released best-effort sources). */
  degradedReasons?(): readonly string[];
}

/** Options of {@linkcode serveMetrics}. */
export interface MetricsServerOptions {
  hostname: string;
  /** 0 picks a free port. */
  port: number;
}

/** What {@linkcode serveMetrics} needs. */
export interface MetricsServerDeps {
  registry: MetricsRegistry;
  readiness: Readiness;
  log: Logger;
}

/** A running metrics server. */
export interface RunningMetricsServer extends AsyncDisposable {
  /** The port actually bound. */
  readonly port: number;
  readonly hostname: string;
  close(): Promise<void>;
}

/**
 * Starts the HTTP server.
 *
 * @param options Address to bind.
 * @param deps Registry, readiness and log.
 * @returns The running server.
 */
export function serveMetrics(
  options: MetricsServerOptions,
  deps: MetricsServerDeps,
): Promise<RunningMetricsServer> {
  const { promise, resolve } = Promise.withResolvers<Deno.NetAddr>();
  const server = Deno.serve({
    hostname: options.hostname,
    port: options.port,
    onListen: (addr) => resolve(addr as Deno.NetAddr),
    onError: (err) => {
      deps.log.error("metrics request failed", { error: err });
      return new Response("internal error\n", { status: 500 });
    },
  }, async (request) => {
    const { pathname } = new URL(request.url);
    if (request.method !== "GET" && request.method !== "HEAD") {
      return new Response("method not allowed\n", { status: 405 });
    }
    switch (pathname) {
      case "/metrics":
        return new Response(await deps.registry.expose(), {
          headers: { "content-type": deps.registry.contentType },
        });
      case "/healthz":
        return new Response("ok\n");
      case "/readyz": {
        const reasons = deps.readiness.notReadyReasons();
        if (reasons.length > 0) {
          return new Response(reasons.map((r) => `not ready: ${r}\n`).join(""), { status: 503 });
        }
        const degraded = deps.readiness.degradedReasons?.() ?? [];
        return new Response(`ok\n${degraded.map((r) => `degraded: ${r}\n`).join("")}`);
      }
      default:
        return new Response("not found\n", { status: 404 });
    }
  });
  return promise.then((addr) => ({
    port: addr.port,
    hostname: addr.hostname,
    close: () => server.shutdown(),
    [Symbol.asyncDispose]: () => server.shutdown(),
  }));
}
