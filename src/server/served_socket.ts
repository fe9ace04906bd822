/**
 * One UNIX socket a gRPC server listens on: bound atomically with its
 * permissions, watched (see `socket_watchdog.ts`), recorded in
 * {@linkcode OwnSockets} while it is the daemon's, and removed on close only
 * if the file at the path is still the daemon's own.
 *
 * The `compat` role is the kubelet's Pods API path (DESIGN.md §16): served only
 * while no other server answers there. At start a live server there (a
 * kubelet) keeps it; later, when a kubelet takes the path, the daemon gives
 * it up for good, logs it once and counts it. It never binds over, nor
 * removes, a socket another server owns.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import { clockSleep } from "../sleep.ts";
import type { GrpcServer } from "../grpc/server.ts";
import type { Logger } from "../log.ts";
import type { Metrics } from "../metrics/metrics.ts";
import { type SocketRole, watchSocket } from "./socket_watchdog.ts";
import {
  isLive,
  type OwnSockets,
  prepareSocketPath,
  type PublishMode,
  removeSocket,
  type SocketIdentity,
} from "./unix_socket.ts";

/** Options of {@linkcode serveSocket}. */
export interface ServedSocketOptions {
  path: string;
  role: SocketRole;
  /** Group allowed to connect. @default {"root"} */
  group?: string;
  /** How often the watchdog looks, ms. @default {2000} */
  checkMs?: number;
  /** Where the daemon records the sockets it bound. */
  own?: OwnSockets;
}

/** What {@linkcode serveSocket} needs besides its options. */
export interface ServedSocketDeps {
  log: Logger;
  metrics: Metrics;
  /** The watchdog waits on it. @default {real time} */
  clock?: Clock;
}

/** A socket being served. */
export interface ServedSocket {
  readonly path: string;
  /** `false` when the path was not taken (compat, at start) or was given up. */
  readonly serving: boolean;
  /** Stops the watchdog and the listener; removes the file if it is still ours. */
  close(): Promise<void>;
}

/**
 * Binds `options.path` for `server` and watches it.
 *
 * @param server The gRPC server to serve on it.
 * @param options Path, role, group, check period, own-socket record.
 * @param deps Log and metrics.
 * @returns The served socket (for `compat`, possibly not serving).
 * @throws {Error} For `main`, when the path cannot be bound (`compat` logs instead).
 */
export async function serveSocket(
  server: GrpcServer,
  options: ServedSocketOptions,
  deps: ServedSocketDeps,
): Promise<ServedSocket> {
  const { path, role, own } = options;
  const { log, metrics } = deps;
  // The main socket's directory is the daemon's own; the compatibility socket's is the kubelet's.
  const group = {
    ...(options.group === undefined ? {} : { group: options.group }),
    ownDirectory: role === "main",
  };
  let listener: Deno.Listener | undefined;
  let ours: SocketIdentity | undefined;
  let serving = false;
  const release = () => {
    if (listener !== undefined) server.unserve(listener);
    if (ours !== undefined) own?.delete(ours);
    listener = undefined;
  };
  const bind = async (mode: PublishMode) => {
    const prepared = await prepareSocketPath(path, group);
    const next = Deno.listen({ transport: "unix", path: prepared.tempPath });
    let id: SocketIdentity;
    try {
      id = await prepared.publish(mode);
    } catch (err) {
      next.close();
      await removeSocket(prepared.tempPath);
      throw err;
    }
    release();
    listener = next;
    ours = id;
    own?.add(id);
    server.serve(next);
    serving = true;
  };
  if (role === "main") {
    await bind("replace");
  } else {
    try {
      await bind("replace");
    } catch (error) {
      if (await isLive(path)) {
        log.info("another server (the kubelet) serves the kubelet's Pods API path; leaving it", {
          socket: path,
        });
      } else {
        log.warn("cannot serve the compatibility socket; serving without it", {
          socket: path,
          error,
        });
      }
    }
  }
  if (role === "compat") metrics.compatSocketServing.set(serving ? 1 : 0);
  const stop = new AbortController();
  const watchdog = !serving ? Promise.resolve() : watchSocket({
    path,
    role,
    ...(options.checkMs === undefined ? {} : { checkMs: options.checkMs }),
    ours: () => ours,
    rebind: bind,
    ...(deps.clock === undefined ? {} : { sleep: clockSleep(deps.clock) }),
    giveUp(why) {
      release();
      serving = false;
      metrics.compatSocketServing.set(0);
      metrics.compatSocketYielded.inc();
      log.warn(
        "another server took the kubelet's Pods API path; gave the compatibility socket up for good",
        { socket: path, why },
      );
    },
    log,
    metrics,
    signal: stop.signal,
  });
  let closed: Promise<void> | undefined;
  return {
    path,
    get serving() {
      return serving;
    },
    close() {
      closed ??= (async () => {
        stop.abort();
        await watchdog;
        const id = ours;
        release();
        if (serving && id !== undefined) await removeSocket(path, id);
        serving = false;
        if (role === "compat") metrics.compatSocketServing.set(0);
      })();
      return closed;
    },
  };
}
