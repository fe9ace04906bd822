/**
 * Watches a socket path the daemon serves and tells three things apart: the
 * daemon's own socket (same device and inode as it bound), a missing file
 * (an operator's `rm`, a tmpfiles clean-up: bound again, without ever
 * replacing a file that appears meanwhile), and someone else's socket or
 * file. What to do about the last depends on the socket's role:
 * - `main` (`--socket`): another server's live socket is left alone and
 *   reported; a dead one is replaced; anything that is not a socket is left
 *   alone and reported.
 * - `compat` (`--kubelet-compat-socket`, the kubelet's path): whatever took
 *   the path (a kubelet unlinks the file and binds its own) keeps it; the
 *   daemon gives the path up for good.
 *
 * @module
 */

import type { Logger } from "../log.ts";
import type { Metrics } from "../metrics/metrics.ts";
import { abortableSleep, type Sleep } from "../sleep.ts";
import {
  identityOf,
  isLive,
  type PublishMode,
  sameSocket,
  type SocketIdentity,
} from "./unix_socket.ts";

/** What a socket path holds, seen from the daemon that bound it. */
export type SocketPathState =
  /** The socket the daemon bound. */
  | "ours"
  | "missing"
  /** Another socket: another server's, live or dead. */
  | "foreign"
  /** Not a socket (a file, a symlink, a directory). */
  | "other";

/** Which socket is watched: the daemon's own home, or the kubelet's path it borrows. */
export type SocketRole = "main" | "compat";

/** Options of {@linkcode watchSocket}. */
export interface SocketWatchdogOptions {
  /** The socket path clients use. */
  path: string;
  role: SocketRole;
  /** How often to look, in ms. @default {2000} */
  checkMs?: number;
  /** The identity of the socket the daemon has bound at `path` now. */
  ours: () => SocketIdentity | undefined;
  /** Binds the socket again at `path` (with its permissions). */
  rebind: (mode: PublishMode) => Promise<void>;
  /** `compat` only: stop serving the path (it is someone else's now). */
  giveUp?: (why: string) => void;
  log: Logger;
  metrics: Metrics;
  /** Stops watching. */
  signal: AbortSignal;
  /** Waits between looks; the daemon's runs on its clock. @default {abortableSleep} */
  sleep?: Sleep;
}

/**
 * Looks at what a socket path holds.
 *
 * @param path The socket path.
 * @param ours The identity of the socket the daemon bound there.
 * @returns What is there.
 */
export async function socketPathState(
  path: string,
  ours: SocketIdentity | undefined,
): Promise<SocketPathState> {
  try {
    const info = await Deno.lstat(path);
    if (!info.isSocket) return "other";
    return sameSocket(identityOf(info), ours) ? "ours" : "foreign";
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return "missing";
    throw err;
  }
}

/**
 * Checks the socket path until the signal aborts (or, for `compat`, until
 * the path is given up).
 *
 * @param options Path, role, period, re-bind and give-up steps, log, metrics and signal.
 * @returns Resolves when the signal aborts or the path was given up.
 */
export async function watchSocket(options: SocketWatchdogOptions): Promise<void> {
  const { path, log, metrics, signal, role } = options;
  const sleep = options.sleep ?? abortableSleep;
  const what = role === "main" ? "the API socket" : "the compatibility socket";
  let complained: SocketPathState | undefined;
  while (!signal.aborted) {
    await sleep(options.checkMs ?? 2000, signal);
    if (signal.aborted) return;
    let state: SocketPathState;
    try {
      state = await socketPathState(path, options.ours());
    } catch (err) {
      log.warn(`cannot check ${what}`, { socket: path, error: err });
      continue;
    }
    if (state === "ours") {
      complained = undefined;
      continue;
    }
    if (state === "missing") {
      if (await rebind(options, "no-clobber", `${what} file was removed`)) continue;
      // Lost the race to whoever bound the path meanwhile (a kubelet binding its own socket)?
      if (role !== "compat") continue;
      try {
        state = await socketPathState(path, options.ours());
      } catch {
        continue;
      }
      if (state === "missing" || state === "ours") continue;
    }
    if (role === "compat") {
      const taken = state === "foreign"
        ? "another server's socket"
        : "something that is not a socket";
      options.giveUp?.(`the path now holds ${taken}`);
      return;
    }
    if (state === "foreign" && !(await isLive(path))) {
      // A dead socket in our place: nobody's to lose.
      await rebind(options, "replace", `${what} was replaced by a dead socket`);
      continue;
    }
    if (complained === state) continue;
    complained = state;
    if (state === "foreign") {
      log.error(`another server took ${what}'s path; not touching it`, { socket: path });
      metrics.socketProblems.inc({ problem: "taken" });
    } else {
      log.error(`${what}'s path holds something else; not touching it`, { socket: path });
      metrics.socketProblems.inc({ problem: "replaced" });
    }
  }
}

/** @returns `true` when the socket is bound again. */
async function rebind(
  options: SocketWatchdogOptions,
  mode: PublishMode,
  why: string,
): Promise<boolean> {
  const { log, metrics, path } = options;
  try {
    await options.rebind(mode);
    metrics.socketProblems.inc({ problem: "recreated" });
    log.warn(`${why}; bound it again`, { socket: path });
    return true;
  } catch (err) {
    metrics.socketProblems.inc({ problem: "rebind_failed" });
    log.error(`${why} and it cannot be bound again`, { socket: path, error: err });
    return false;
  }
}
