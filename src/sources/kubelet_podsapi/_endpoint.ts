/**
 * The kubelet's Pods API endpoint: parsing `--kubelet-pods-api-endpoint`,
 * and a look at what is at its path before dialing, so a missing socket, a
 * file that is not one, or this daemon's own compatibility socket (the same
 * path on a node whose kubelet has no Pods API) are told apart from a
 * kubelet.
 *
 * @module
 */

/**
 * A socket file's identity: device and inode, as `stat` gives them, and its
 * birth time. A file system hands a freed inode number to the next file made
 * (ext4 did, in a test where a kubelet replaced this daemon's socket within
 * milliseconds), so device and inode alone took the kubelet's new socket for
 * the daemon's own.
 */
export interface SocketIdentity {
  readonly dev: number;
  readonly ino: number;
  /** Birth time, epoch ms; -1 where the file system keeps none. */
  readonly born: number;
}

/**
 * @param info A file's `stat`.
 * @returns Its identity, or `undefined` when the platform gives no inode.
 */
export function identityOf(info: Deno.FileInfo): SocketIdentity | undefined {
  if (info.dev === null || info.ino === null) return undefined;
  return { dev: info.dev, ino: info.ino, born: info.birthtime?.getTime() ?? -1 };
}

/**
 * @param a An identity.
 * @param b Another.
 * @returns `true` when both name the same file.
 */
export function sameSocket(a: SocketIdentity | undefined, b: SocketIdentity | undefined): boolean {
  return a !== undefined && b !== undefined && a.dev === b.dev && a.ino === b.ino &&
    a.born === b.born;
}

/** What is at the endpoint's path. */
export type EndpointProbe =
  | { readonly kind: "socket" }
  | { readonly kind: "absent"; readonly why: string };

/**
 * Parses an endpoint: `unix:///path` or an absolute path.
 *
 * @example Usage
 * ```ts ignore
 * parsePodsApiEndpoint("unix:///var/lib/kubelet/pods-api/pods-api.sock");
 * // "/var/lib/kubelet/pods-api/pods-api.sock"
 * ```
 *
 * @param endpoint The endpoint.
 * @returns The socket path.
 * @throws {TypeError} For another scheme or a relative path.
 */
export function parsePodsApiEndpoint(endpoint: string): string {
  let path = endpoint;
  if (endpoint.startsWith("unix://")) path = endpoint.slice("unix://".length);
  else if (/^[a-z][a-z0-9+.-]*:/i.test(endpoint)) {
    throw new TypeError(
      `Cannot use kubelet Pods API endpoint "${endpoint}": only unix sockets are supported`,
    );
  }
  if (!path.startsWith("/")) {
    throw new TypeError(
      `Cannot use kubelet Pods API endpoint "${endpoint}": the path must be absolute`,
    );
  }
  return path;
}

/**
 * Looks at the endpoint's path.
 *
 * @param path The socket path.
 * @param isOwnSocket Whether a socket is this daemon's own.
 * @returns `socket` when a server other than this daemon may be there.
 */
export async function probeEndpoint(
  path: string,
  isOwnSocket: (identity: SocketIdentity) => boolean,
): Promise<EndpointProbe> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return { kind: "absent", why: "no socket" };
    return { kind: "absent", why: `cannot stat: ${(err as Error).message}` };
  }
  if (!info.isSocket) return { kind: "absent", why: "not a socket" };
  const id = identityOf(info);
  if (id !== undefined && isOwnSocket(id)) {
    return { kind: "absent", why: "this daemon's own compatibility socket" };
  }
  return { kind: "socket" };
}
