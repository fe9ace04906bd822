/**
 * Notices when the API socket's file disappears while the daemon runs (an
 * operator's `rm`, a tmpfiles clean-up) and binds it again: open calls keep
 * working either way, but without the file no new client could connect.
 *
 * @module
 */

import type { Logger } from "../log.ts";
import type { Metrics } from "../metrics/metrics.ts";
import { abortableSleep, type Sleep } from "../sleep.ts";

/** Options of {@linkcode watchSocket}. */
export interface SocketWatchdogOptions {
  /** The socket path clients use. */
  path: string;
  /** How often to look, in ms. @default {2000} */
  checkMs?: number;
  /** Binds the socket again at `path` (atomically, with its permissions). */
  rebind: () => Promise<void>;
  log: Logger;
  metrics: Metrics;
  /** Stops watching. */
  signal: AbortSignal;
  /** Waits between looks; the daemon's runs on its clock. @default {abortableSleep} */
  sleep?: Sleep;
}

async function present(path: string): Promise<"socket" | "missing" | "other"> {
  try {
    const info = await Deno.lstat(path);
    return info.isSocket ? "socket" : "other";
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return "missing";
    throw err;
  }
}

/**
 * Checks the socket path until the signal aborts; re-binds it when missing.
 * Something else at the path (a file, a symlink) is left alone and logged.
 *
 * @param options Path, period, re-bind step, log, metrics and signal.
 * @returns Resolves when the signal aborts.
 */
export async function watchSocket(options: SocketWatchdogOptions): Promise<void> {
  const { path, log, metrics, signal } = options;
  const sleep = options.sleep ?? abortableSleep;
  let complained = false;
  while (!signal.aborted) {
    await sleep(options.checkMs ?? 2000, signal);
    if (signal.aborted) return;
    let state;
    try {
      state = await present(path);
    } catch (err) {
      log.warn("cannot check the API socket", { socket: path, error: err });
      continue;
    }
    if (state === "socket") {
      complained = false;
      continue;
    }
    if (state === "other") {
      if (!complained) {
        log.error("the API socket path holds something else; not touching it", { socket: path });
        metrics.socketProblems.inc({ problem: "replaced" });
        complained = true;
      }
      continue;
    }
    try {
      await options.rebind();
      metrics.socketProblems.inc({ problem: "recreated" });
      log.warn("the API socket file was removed; bound it again", { socket: path });
    } catch (err) {
      metrics.socketProblems.inc({ problem: "rebind_failed" });
      log.error("the API socket file was removed and cannot be bound again", {
        socket: path,
        error: err,
      });
    }
  }
}
