/**
 * `/healthz` and `/readyz` before the daemon has started: while `serve`
 * waits for the container runtime, the kubelet's probes and operators still
 * get answers (alive; not ready, and why) on the metrics address. The daemon
 * binds the address itself once it starts, so this server is closed first.
 *
 * @module
 */

import type { Logger } from "../log.ts";
import { type MetricsServerOptions, type RunningMetricsServer, serveMetrics } from "./http.ts";
import type { MetricsRegistry } from "./registry.ts";

/** What {@linkcode StartupProbe} needs. */
export interface StartupProbeDeps {
  registry: MetricsRegistry;
  log: Logger;
}

/** Serves "not ready: <reason>" on the metrics address until closed. */
export class StartupProbe implements AsyncDisposable {
  #options: MetricsServerOptions;
  #deps: StartupProbeDeps;
  #reason = "starting";
  #server: Promise<RunningMetricsServer | undefined> | undefined;

  /**
   * Binds nothing until {@linkcode StartupProbe.notReady} is first called.
   *
   * @param options The metrics address.
   * @param deps Registry (served on `/metrics` meanwhile) and log.
   */
  constructor(options: MetricsServerOptions, deps: StartupProbeDeps) {
    this.#options = options;
    this.#deps = deps;
  }

  /**
   * Reports not ready; the first call binds the metrics address. A failed
   * bind is logged and otherwise ignored (the daemon's own bind reports it).
   *
   * @param reason The `/readyz` reason.
   */
  notReady(reason: string): void {
    this.#reason = reason;
    this.#server ??= serveMetrics(this.#options, {
      registry: this.#deps.registry,
      readiness: { notReadyReasons: () => [this.#reason] },
      log: this.#deps.log,
    }).then((server) => {
      this.#deps.log.info("serving /readyz while starting", {
        address: `${server.hostname}:${server.port}`,
      });
      return server;
    }, (err) => {
      this.#deps.log.warn("cannot serve /readyz while starting", { error: err });
      return undefined;
    });
  }

  /**
   * Stops serving.
   *
   * @returns The port that was bound (so a `:0` address keeps its port), if any.
   */
  async close(): Promise<number | undefined> {
    const server = await this.#server;
    this.#server = undefined;
    if (server === undefined) return undefined;
    await server.close();
    return server.port;
  }

  /** Same as {@linkcode StartupProbe.close}. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}
