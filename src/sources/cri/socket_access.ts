/**
 * A runtime socket the daemon may not open is a configuration error, not a
 * runtime that is still starting: waiting cannot grant a permission. Two
 * things can refuse it: the process's Deno permissions (`NotCapable`: the
 * path is outside the compiled binary's, the image's or `deno run`'s
 * `--allow-read`/`--allow-write` list) and the system (`EACCES`/`EPERM`: the
 * socket's owner, group and mode, or a directory on its path). Either ends
 * `pods-api serve` with exit code 2 at once, so systemd's
 * `RestartPreventExitStatus=2` stops restarting it; a socket that is missing,
 * or there but not accepting yet, is still waited for.
 *
 * @module
 */

/** Exit code of a usage or configuration error (`EXIT.usage` in main.ts). */
const EXIT_CONFIGURATION = 2;

/** What refused the socket. */
export type SocketDenial = "deno-permission" | "system";

/** Raised when a runtime socket may not be opened: `pods-api serve` exits with code 2. */
export class RuntimeSocketAccessError extends Error {
  /** The process exit code. */
  readonly exitCode = EXIT_CONFIGURATION;
  /** The socket path. */
  readonly socketPath: string;
  /** What refused it. */
  readonly denial: SocketDenial;

  /**
   * @param socketPath The socket path.
   * @param denial What refused it.
   * @param message The whole message.
   * @param options The refusal.
   */
  constructor(
    socketPath: string,
    denial: SocketDenial,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "RuntimeSocketAccessError";
    this.socketPath = socketPath;
    this.denial = denial;
  }
}

/**
 * The permission refusal in an error or its causes, if there is one.
 *
 * @param err An error from a stat of or a connect to the socket, possibly wrapped.
 * @returns The `NotCapable` or `PermissionDenied` error, or `undefined`.
 */
export function socketDenial(
  err: unknown,
): Deno.errors.NotCapable | Deno.errors.PermissionDenied | undefined {
  for (let e = err, depth = 0; e !== undefined && depth < 8; depth++) {
    if (e instanceof Deno.errors.NotCapable || e instanceof Deno.errors.PermissionDenied) return e;
    e = e instanceof Error ? e.cause : undefined;
  }
  return undefined;
}

function octal(mode: number): string {
  return (mode & 0o7777).toString(8).padStart(4, "0");
}

/** Owner, group and mode of the socket, when the system lets us see them. */
function describeSocket(path: string): string {
  try {
    const info = Deno.statSync(path);
    if (info.uid === null || info.gid === null || info.mode === null) return "";
    return ` (owner uid ${info.uid}, group gid ${info.gid}, mode ${octal(info.mode)})`;
  } catch {
    return "";
  }
}

function processUid(): string {
  try {
    return `uid ${Deno.uid() ?? "?"}`;
  } catch {
    return "its user";
  }
}

/**
 * The configuration error for a refused runtime socket, with a message that
 * names the socket, what refused it and what to change.
 *
 * @example Usage
 * ```ts
 * import { runtimeSocketAccessError } from "./socket_access.ts";
 * const err = runtimeSocketAccessError(
 *   "/custom/cri.sock",
 *   new Deno.errors.NotCapable('Requires read access to "/custom/cri.sock"'),
 * );
 * err.exitCode; // 2
 * ```
 *
 * @param path The socket path.
 * @param denial The `NotCapable` or `PermissionDenied` error.
 * @returns The error to throw.
 */
export function runtimeSocketAccessError(
  path: string,
  denial: Deno.errors.NotCapable | Deno.errors.PermissionDenied,
): RuntimeSocketAccessError {
  if (denial instanceof Deno.errors.NotCapable) {
    const missing = /Requires (\w+) access/.exec(denial.message)?.[1];
    const lacks = missing === undefined ? "access" : `${missing} access`;
    return new RuntimeSocketAccessError(
      path,
      "deno-permission",
      `Cannot open the container runtime socket ${path}: pods-api's permissions lack ${lacks} ` +
        `to it (connecting to a UNIX socket needs read, write and net access to its path). The ` +
        `compiled binary, the image and the systemd unit allow only the well-known runtime ` +
        `sockets (docs/OPERATIONS.md, "What the daemon may do"): point ` +
        `--container-runtime-endpoint at one of them (a symlink there to this socket works), or ` +
        `add this path to CRI_SOCKETS in scripts/_permissions.ts and build again; running the ` +
        `bundle with deno run, add it to both --allow-read and --allow-write`,
      { cause: denial },
    );
  }
  return new RuntimeSocketAccessError(
    path,
    "system",
    `Cannot open the container runtime socket ${path}: permission denied by the system to ` +
      `${processUid()}${describeSocket(path)}. Run pods-api as root (as the systemd unit and the ` +
      `DaemonSet do), or as a user the socket and every directory above it let in`,
    { cause: denial },
  );
}
