/**
 * The API socket's file-system side (DESIGN.md §2): a private directory, stale
 * sockets replaced, anything that is not a socket left alone, and the final
 * name appearing only once the socket is ready with its permissions.
 *
 * @module
 */

import { dirname, join } from "node:path";
import { identityOf, sameSocket, type SocketIdentity } from "../sources/kubelet_podsapi/mod.ts";

export { identityOf, sameSocket, type SocketIdentity };

/** Options of {@linkcode prepareSocketPath}. */
export interface SocketPathOptions {
  /** Group that may connect (name or numeric id); `root` by default. */
  group?: string;
  /**
   * The directory is the daemon's own (the `--socket` directory, not the
   * kubelet's): one that exists already is made 0750 with the socket's group
   * too, when it holds nothing but sockets (a directory with anything else in
   * it, `/run` say, is never changed). A new directory is made so either way.
   */
  ownDirectory?: boolean;
}

/**
 * How a bound socket takes its final name: `replace` renames it over what is
 * there (nothing, or a stale socket checked before binding); `no-clobber`
 * links it only if the name is still free, so a server that took the path
 * meanwhile (a kubelet binding its own socket) is never replaced.
 */
export type PublishMode = "replace" | "no-clobber";

/** Where to bind before renaming into place. */
export interface PreparedSocket {
  /** The temporary path to listen on, in the final path's directory. */
  readonly tempPath: string;
  /**
   * Makes the socket group-accessible (0660, group set) and gives it its final name.
   *
   * @param mode `replace` (the default) or `no-clobber`.
   * @returns The identity of the socket now at the final path.
   * @throws {Error} When the path is taken (`no-clobber`) or holds something that is not a socket.
   */
  publish(mode?: PublishMode): Promise<SocketIdentity>;
}

/**
 * The sockets this daemon has bound, by identity, so it can tell its own
 * socket from another server's at the same path (the kubelet's Pods API
 * source must not read the daemon's own compatibility socket).
 */
export class OwnSockets {
  readonly #ids = new Set<string>();

  /** @param id A socket this daemon bound. */
  add(id: SocketIdentity): void {
    this.#ids.add(keyOf(id));
  }

  /** @param id A socket this daemon no longer serves. */
  delete(id: SocketIdentity): void {
    this.#ids.delete(keyOf(id));
  }

  /**
   * @param id A socket file's identity.
   * @returns `true` when this daemon bound it.
   */
  has(id: SocketIdentity): boolean {
    return this.#ids.has(keyOf(id));
  }
}

/** An identity as one string, to keep in a set. */
function keyOf(id: SocketIdentity): string {
  return `${id.dev}:${id.ino}:${id.born}`;
}

/**
 * The identity of the file at `path`, without following a symlink.
 *
 * @param path A path.
 * @returns Its device, inode and birth time, or `undefined` when nothing is there.
 */
export async function socketIdentity(path: string): Promise<SocketIdentity | undefined> {
  const info = await lstatOrNull(path);
  return info === null ? undefined : identityOf(info);
}

/**
 * Resolves a group name or number to a gid via `/etc/group`.
 *
 * @param group A group name or a numeric gid.
 * @returns The gid.
 * @throws {TypeError} When the group does not exist.
 */
export async function resolveGid(group: string): Promise<number> {
  if (/^\d+$/.test(group)) return Number(group);
  const text = await Deno.readTextFile("/etc/group");
  for (const line of text.split("\n")) {
    const [name, , gid] = line.split(":");
    if (name === group && gid !== undefined) return Number(gid);
  }
  throw new TypeError(`Cannot find group "${group}" in /etc/group`);
}

async function lstatOrNull(path: string): Promise<Deno.FileInfo | null> {
  try {
    return await Deno.lstat(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return null;
    throw err;
  }
}

/**
 * Whether a server accepts connections at a socket path.
 *
 * @param path A socket path.
 * @returns `true` when a connection succeeds.
 */
export async function isLive(path: string): Promise<boolean> {
  try {
    const conn = await Deno.connect({ transport: "unix", path });
    conn.close();
    return true;
  } catch {
    return false;
  }
}

/** 0750, and as root owned by root and the socket's group: members must reach the socket. */
async function restrictDirectory(dir: string, gid: number): Promise<void> {
  await Deno.chmod(dir, 0o750);
  if (Deno.uid() === 0) await Deno.chown(dir, 0, gid);
}

/** Whether every entry of `dir` is a socket (an empty directory included). */
async function holdsOnlySockets(dir: string): Promise<boolean> {
  for await (const entry of Deno.readDir(dir)) {
    if (entry.isDirectory || entry.isSymlink) return false;
    const info = await lstatOrNull(join(dir, entry.name));
    if (info !== null && !info.isSocket) return false;
  }
  return true;
}

/**
 * Makes the socket's directory, checks what is at the final path, and picks
 * a temporary name to bind to.
 *
 * @param path The socket path clients use.
 * @param options The group that may connect.
 * @returns The temporary path and a `publish` step to run after binding.
 * @throws {Error} When the path holds something that is not a socket, or a live server.
 */
export async function prepareSocketPath(
  path: string,
  options: SocketPathOptions = {},
): Promise<PreparedSocket> {
  const dir = dirname(path);
  const gid = await resolveGid(options.group ?? "root");
  const before = await lstatOrNull(dir);
  if (before === null) {
    await Deno.mkdir(dir, { recursive: true, mode: 0o750 });
    await restrictDirectory(dir, gid);
  } else if (options.ownDirectory === true && before.isDirectory && await holdsOnlySockets(dir)) {
    // Made by someone else first (a hostPath DirectoryOrCreate is 0755): private all the same.
    await restrictDirectory(dir, gid);
  }
  const existing = await lstatOrNull(path);
  if (existing !== null) {
    if (existing.isSymlink || !existing.isSocket) {
      throw new Error(
        `Cannot listen on "${path}": it exists and is not a socket (refusing to replace it)`,
      );
    }
    if (await isLive(path)) {
      throw new Error(`Cannot listen on "${path}": another server is accepting connections there`);
    }
  }
  const tempPath = join(dir, `.${crypto.randomUUID().slice(0, 8)}.sock.tmp`);
  return {
    tempPath,
    async publish(mode = "replace") {
      await Deno.chmod(tempPath, 0o660);
      if (Deno.uid() === 0) await Deno.chown(tempPath, 0, gid);
      const again = await lstatOrNull(path);
      if (again !== null && (again.isSymlink || !again.isSocket)) {
        await Deno.remove(tempPath);
        throw new Error(`Cannot listen on "${path}": it exists and is not a socket`);
      }
      if (mode === "replace") {
        await Deno.rename(tempPath, path);
      } else {
        try {
          // link() fails if the name exists: atomic, and never over another's socket.
          await Deno.link(tempPath, path);
        } catch (err) {
          await Deno.remove(tempPath).catch(() => {});
          if (err instanceof Deno.errors.AlreadyExists) {
            throw new Error(`Cannot listen on "${path}": another socket took the path`);
          }
          throw err;
        }
        await Deno.remove(tempPath);
      }
      const id = await socketIdentity(path);
      if (id === undefined) {
        throw new Error(`Cannot listen on "${path}": it vanished after binding`);
      }
      return id;
    },
  };
}

/**
 * Removes the socket at `path` if (and only if) it is a socket, and, when
 * `ours` is given, the very socket this daemon bound: another server's socket
 * at the path is never removed.
 *
 * @param path The socket path.
 * @param ours The identity of the socket this daemon bound there.
 */
export async function removeSocket(path: string, ours?: SocketIdentity): Promise<void> {
  const info = await lstatOrNull(path);
  if (!info?.isSocket) return;
  if (ours !== undefined && !sameSocket(identityOf(info), ours)) return;
  await Deno.remove(path).catch(() => {});
}
