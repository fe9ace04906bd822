/**
 * Why a client could not reach the daemon, found by looking at the socket
 * path itself: a gRPC UNAVAILABLE says only "cannot connect", while a person
 * needs to know whether the daemon is down, the path is wrong or their user
 * lacks the socket's group.
 *
 * @module
 */

/** Why the socket could not be reached. */
export const CONNECT_FAILURE = {
  /** Nothing at the path (daemon never started, or another `--socket`). */
  noSocket: "no-socket",
  /** The path or its directory is not open to this user. */
  permissionDenied: "permission-denied",
  /** A socket file is there but nobody listens (daemon stopped or crashed). */
  notRunning: "not-running",
  /** The path is not a socket. */
  notASocket: "not-a-socket",
  /** Something else; the system's message says what. */
  other: "other",
} as const;

/** One of {@linkcode CONNECT_FAILURE}. */
export type ConnectFailure = typeof CONNECT_FAILURE[keyof typeof CONNECT_FAILURE];

/** The daemon's socket could not be reached; `reason` says why. */
export class PodsApiConnectError extends Error {
  /** Why. */
  readonly reason: ConnectFailure;
  /** The socket path tried. */
  readonly socketPath: string;
  /** The socket's group, when the socket exists and the group could be read. */
  readonly socketGroup: string | undefined;

  /**
   * Builds the error and its message.
   *
   * @param reason Why.
   * @param socketPath The socket path tried.
   * @param detail The system's message.
   * @param socketGroup The socket's group (name, or gid when unnamed).
   */
  constructor(reason: ConnectFailure, socketPath: string, detail: string, socketGroup?: string) {
    super(connectMessage(reason, socketPath, detail, socketGroup));
    this.name = "PodsApiConnectError";
    this.reason = reason;
    this.socketPath = socketPath;
    this.socketGroup = socketGroup;
  }
}

function connectMessage(
  reason: ConnectFailure,
  path: string,
  detail: string,
  group: string | undefined,
): string {
  switch (reason) {
    case CONNECT_FAILURE.noSocket:
      return `No daemon socket at ${path}: start the daemon (pods-api serve), or name its socket with --socket or PODS_API_SOCKET`;
    case CONNECT_FAILURE.permissionDenied:
      return `Permission denied on ${path}: run as root or as a member of the socket's group (${
        group ?? "the daemon's --socket-group"
      }); the daemon's --socket-group names the group allowed to connect`;
    case CONNECT_FAILURE.notRunning:
      return `The daemon is not running: ${path} exists but nobody accepts connections on it (start pods-api serve, or check its logs)`;
    case CONNECT_FAILURE.notASocket:
      return `${path} is not a socket: point --socket or PODS_API_SOCKET at the daemon's socket`;
    default:
      return `Cannot connect to ${path}: ${detail}`;
  }
}

/**
 * Finds out why `path` cannot be connected to.
 *
 * @example Usage
 * ```ts
 * import { diagnoseSocket } from "./connect_error.ts";
 * const err = await diagnoseSocket("/nonexistent/pods-api.sock");
 * err?.reason; // "no-socket"
 * ```
 *
 * @param path The socket path.
 * @returns The reason as an error, or `undefined` when a connection now succeeds.
 */
export async function diagnoseSocket(path: string): Promise<PodsApiConnectError | undefined> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.lstat(path);
  } catch (err) {
    return fromSystemError(err, path, undefined);
  }
  const group = info.gid === null ? undefined : groupName(info.gid);
  if (info.isSymlink) {
    try {
      info = await Deno.stat(path);
    } catch (err) {
      return fromSystemError(err, path, group);
    }
  }
  if (info.isSocket === false) {
    return new PodsApiConnectError(CONNECT_FAILURE.notASocket, path, "not a socket");
  }
  try {
    const conn = await Deno.connect({ transport: "unix", path });
    conn.close();
    return undefined;
  } catch (err) {
    return fromSystemError(err, path, group);
  }
}

function fromSystemError(
  err: unknown,
  path: string,
  group: string | undefined,
): PodsApiConnectError {
  const detail = (err as Error).message;
  if (err instanceof Deno.errors.NotFound) {
    return new PodsApiConnectError(CONNECT_FAILURE.noSocket, path, detail);
  }
  if (err instanceof Deno.errors.PermissionDenied) {
    return new PodsApiConnectError(CONNECT_FAILURE.permissionDenied, path, detail, group);
  }
  if (err instanceof Deno.errors.ConnectionRefused) {
    return new PodsApiConnectError(CONNECT_FAILURE.notRunning, path, detail);
  }
  return new PodsApiConnectError(CONNECT_FAILURE.other, path, detail);
}

/** The name of group `gid` from /etc/group, or the number when it has none or cannot be read. */
function groupName(gid: number): string {
  try {
    for (const line of Deno.readTextFileSync("/etc/group").split("\n")) {
      const [name, , id] = line.split(":");
      if (name && Number(id) === gid) return name;
    }
  } catch {
    // Not readable: the number still names the group.
  }
  return String(gid);
}
