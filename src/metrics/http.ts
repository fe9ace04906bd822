/**
 * The HTTP side: `/metrics` (Prometheus text), `/healthz` (process alive)
 * and `/readyz` (sync gate open and sources fresh), bound to localhost by
 * default, on the daemon's own HTTP/1.1 server: a small connection cap and
 * Go's deadlines, so no local client can take the port or the process down.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import { numericDefault } from "../config_flags.ts";
import { type Http1Timeouts, serveHttp1 } from "../http1/mod.ts";
import type { Logger } from "../log.ts";
import { listenerCounts } from "./listener_counts.ts";
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
  /** Connections held open at once. @default {64} (`--metrics-max-connections`) */
  maxConnections?: number;
  /** Deadlines; the TLS one is unused (plain HTTP). @default the `--http-*-timeout` defaults */
  timeouts?: Http1Timeouts;
}

/** Go's deadlines as the daemon's flags default them. */
export function defaultTimeouts(): Http1Timeouts {
  return {
    tlsHandshakeMs: numericDefault("http-tls-handshake-timeout"),
    readHeaderMs: numericDefault("http-read-header-timeout"),
    idleMs: numericDefault("http-idle-timeout"),
    writeMs: numericDefault("http-write-timeout"),
  };
}

/** What {@linkcode serveMetrics} needs. */
export interface MetricsServerDeps {
  registry: MetricsRegistry;
  readiness: Readiness;
  log: Logger;
  /** Deadlines run on it. @default {systemClock} */
  clock?: Clock;
}

/** A running metrics server. */
export interface RunningMetricsServer extends AsyncDisposable {
  /** The port actually bound. */
  readonly port: number;
  readonly hostname: string;
  close(): Promise<void>;
}

/**
 * Starts the HTTP server (async, so a failed bind rejects rather than throws).
 *
 * @param options Address to bind.
 * @param deps Registry, readiness and log.
 * @returns The running server.
 */
// deno-lint-ignore require-await
export async function serveMetrics(
  options: MetricsServerOptions,
  deps: MetricsServerDeps,
): Promise<RunningMetricsServer> {
  const server = serveHttp1({
    hostname: options.hostname,
    port: options.port,
    name: "metrics",
    maxConnections: options.maxConnections ?? numericDefault("metrics-max-connections"),
    timeouts: options.timeouts ?? defaultTimeouts(),
    observer: listenerCounts(deps.registry.metrics, "metrics"),
    log: deps.log,
    ...(deps.clock === undefined ? {} : { clock: deps.clock }),
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
  const close = () => server.close();
  return {
    port: server.addr.port,
    hostname: server.addr.hostname,
    close,
    [Symbol.asyncDispose]: close,
  };
}
