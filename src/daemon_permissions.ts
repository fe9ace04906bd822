/**
 * The `pods-api` binary is built with read and write on `/` besides the
 * daemon's own paths, so that its client commands reach any socket a user
 * names (scripts/_permissions.ts). The daemon gives `/` back before it reads
 * or writes anything: Deno revokes a path grant and the grants above it,
 * never the narrower grants below, so exactly the daemon's scoped paths stay.
 * Under `deno run --allow-read` (whole, not a list) nothing changes: there is
 * no list to narrow.
 *
 * @module
 */

/** The grant the client commands need and the daemon gives back. */
export const CLIENT_SCOPE = "/";

/**
 * Revokes read and write on {@linkcode CLIENT_SCOPE}, keeping narrower grants.
 *
 * @example Usage
 * ```ts
 * import { dropClientScope } from "./daemon_permissions.ts";
 * dropClientScope();
 * ```
 *
 * @returns Whether a `/` grant was there and is gone now (`false` under a whole `--allow-read`).
 */
export function dropClientScope(): boolean {
  let dropped = false;
  for (const name of ["read", "write"] as const) {
    const before = Deno.permissions.querySync({ name, path: CLIENT_SCOPE }).state;
    const after = Deno.permissions.revokeSync({ name, path: CLIENT_SCOPE }).state;
    if (before === "granted" && after !== "granted") dropped = true;
  }
  return dropped;
}
