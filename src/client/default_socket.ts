/**
 * Where a client finds the daemon when nothing names a socket (DESIGN.md §16
 * "Clients"): the daemon's own path, else the kubelet's Pods API path (where
 * the daemon also answers on older nodes, and the kubelet itself on 1.37+).
 *
 * @module
 */

import { SERVE_FLAGS } from "../config_flags.ts";
import { KUBELET_PODS_API_SOCKET } from "../sources/kubelet_podsapi/mod.ts";

/** The daemon's own socket by default (`serve --socket`), outside `/var/lib/kubelet/` (DESIGN.md §16). */
export const DEFAULT_SOCKET: string = SERVE_FLAGS.socket.default;

/** The kubelet's Pods API socket: the fallback when the daemon's own path has no socket. */
export const KUBELET_SOCKET = KUBELET_PODS_API_SOCKET;

function socketExists(path: string): boolean {
  try {
    return Deno.lstatSync(path).isSocket === true;
  } catch {
    // Missing, or not permitted to look: not there as far as this client can tell.
    return false;
  }
}

/**
 * The default socket: {@linkcode DEFAULT_SOCKET} when a socket is there,
 * else {@linkcode KUBELET_SOCKET} when one is there, else
 * {@linkcode DEFAULT_SOCKET} (so an error names the daemon's own path).
 *
 * @example Usage
 * ```ts
 * import { defaultSocket, DEFAULT_SOCKET } from "./default_socket.ts";
 * defaultSocket(() => false); // DEFAULT_SOCKET
 * ```
 *
 * @param exists Whether a socket is at a path. @default {an lstat}
 * @returns The path to connect to.
 */
export function defaultSocket(exists: (path: string) => boolean = socketExists): string {
  if (exists(DEFAULT_SOCKET)) return DEFAULT_SOCKET;
  if (exists(KUBELET_SOCKET)) return KUBELET_SOCKET;
  return DEFAULT_SOCKET;
}
