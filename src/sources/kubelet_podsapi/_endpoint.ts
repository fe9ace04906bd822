/**
 * The kubelet's Pods API endpoint: parsing `--kubelet-pods-api-endpoint`,
 * and a look at what is at its path before dialing, so a missing socket, a
 * file that is not one, or this daemon's own compatibility socket (the same
 * path on a node whose kubelet has no Pods API) are told apart from a
 * kubelet.
 *
 * @module
 */

/** A socket file's identity: device and inode, as `stat` gives them. */
export interface SocketIdentity {
  readonly dev: number;
  readonly ino: number;
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
  if (info.dev !== null && info.ino !== null && isOwnSocket({ dev: info.dev, ino: info.ino })) {
    return { kind: "absent", why: "this daemon's own compatibility socket" };
  }
  return { kind: "socket" };
}
