/**
 * The API socket's file-system side (SPEC §2): a private directory, stale
 * sockets replaced, anything that is not a socket left alone, and the final
 * name appearing only once the socket is ready with its permissions.
 *
 * @module
 */

import { dirname, join } from "node:path";

/** Options of {@linkcode prepareSocketPath}. */
export interface SocketPathOptions {
  /** Group that may connect (name or numeric id); `root` by default. */
  group?: string;
}

/** Where to bind before renaming into place. */
export interface PreparedSocket {
  /** The temporary path to listen on, in the final path's directory. */
  readonly tempPath: string;
  /** Makes the socket group-accessible (0660, group set) and renames it into place. */
  publish(): Promise<void>;
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

async function isLive(path: string): Promise<boolean> {
  try {
    const conn = await Deno.connect({ transport: "unix", path });
    conn.close();
    return true;
  } catch {
    return false;
  }
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
  if ((await lstatOrNull(dir)) === null) {
    await Deno.mkdir(dir, { recursive: true, mode: 0o750 });
    await Deno.chmod(dir, 0o750);
    // Members of the socket's group must be able to reach it through the directory.
    if (Deno.uid() === 0) await Deno.chown(dir, 0, gid);
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
    async publish() {
      await Deno.chmod(tempPath, 0o660);
      if (Deno.uid() === 0) await Deno.chown(tempPath, 0, gid);
      const again = await lstatOrNull(path);
      if (again !== null && (again.isSymlink || !again.isSocket)) {
        await Deno.remove(tempPath);
        throw new Error(`Cannot listen on "${path}": it exists and is not a socket`);
      }
      await Deno.rename(tempPath, path);
    },
  };
}

/**
 * Removes the socket at `path` if (and only if) it is a socket.
 *
 * @param path The socket path.
 */
export async function removeSocket(path: string): Promise<void> {
  const info = await lstatOrNull(path);
  if (info?.isSocket) await Deno.remove(path).catch(() => {});
}
