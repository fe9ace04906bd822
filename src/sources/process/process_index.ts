/**
 * Which pod's container a process is in, for agents that start from the
 * kernel (a PID, a cgroup ID from `bpf_get_current_cgroup_id()`, a cgroup
 * path, a mount namespace inode). The index maps each running container's
 * cgroup v2 directory (path and inode) and mount namespace to its container
 * ID; it is rebuilt from the runtime's view whenever that changes, so a
 * container that exits leaves it at once. A PID lookup reads only
 * `/proc/<that PID>/cgroup` and walks the path up to the container's
 * directory: children and `exec`'d processes resolve as the init process
 * does. Nothing scans the node's `/proc`.
 *
 * @module
 */

import type { Metrics } from "../../metrics/metrics.ts";
import {
  cgroupDirOf,
  type ContainerProcessSource,
  type RunningContainerProcess,
} from "./container_process.ts";

/** The reads the index makes, injected so tests need no host. */
export interface ProcFs {
  /** @throws {Deno.errors.NotFound} {Deno.errors.PermissionDenied} */
  readText(path: string): string;
  /** The inode of a file or directory. @throws as `readText` */
  inode(path: string): number;
  /** @throws as `readText` */
  readLink(path: string): string;
}

/** The host's `/proc` and cgroup tree. */
export const hostProcFs: ProcFs = {
  readText: (path) => Deno.readTextFileSync(path),
  inode: (path) => Deno.statSync(path).ino ?? 0,
  readLink: (path) => Deno.readLinkSync(path),
};

/** Why a lookup has no answer. */
export type ProcessLookupFailure = "invalid" | "not_found" | "unavailable" | "exhausted";

/**
 * A lookup without an answer: bad input, no such pod process, `/proc` or
 * cgroups unreadable, or no file descriptor left to read them.
 */
export class ProcessLookupError extends Error {
  /**
   * `invalid`: INVALID_ARGUMENT; `not_found`; `unavailable`:
   * FAILED_PRECONDITION; `exhausted` (EMFILE, ENFILE): UNAVAILABLE.
   */
  readonly reason: ProcessLookupFailure;
  /**
   * @param reason What failed.
   * @param message Sentence case, values quoted.
   */
  constructor(reason: ProcessLookupFailure, message: string) {
    super(message);
    this.name = "ProcessLookupError";
    this.reason = reason;
  }
}

/** What a process lookup starts from. */
export type ProcessKey =
  | { readonly kind: "pid"; readonly pid: number }
  | { readonly kind: "cgroupId"; readonly cgroupId: number }
  | { readonly kind: "cgroupPath"; readonly path: string }
  | { readonly kind: "mntns"; readonly inode: number };

/** The container a process is in. */
export interface ContainerOfProcess {
  readonly containerId: string;
  readonly podUid: string;
  /** The container's init PID (host PID namespace). */
  readonly initPid: number;
  /** Its cgroup v2 directory, as `/proc/PID/cgroup` shows it. */
  readonly cgroupPath: string;
  /** That directory's inode (what eBPF calls the cgroup ID). */
  readonly cgroupId: number;
  /** Its init process' mount namespace inode. */
  readonly mntns: number;
}

/** Options of {@linkcode ProcessIndex}. */
export interface ProcessIndexOptions {
  /** @default {hostProcFs} */
  readonly fs?: ProcFs;
  /** Where `/proc` is. @default {"/proc"} */
  readonly procRoot?: string;
  /** cgroup v2 mounts to try, the first holding `cgroup.controllers` wins. */
  readonly cgroupRoots?: readonly string[];
  /**
   * `processLookups` counts each lookup's outcome,
   * `processNamespacesUnreadable` the namespaces the kernel would not show.
   */
  readonly metrics?: Pick<Metrics, "processLookups" | "processNamespacesUnreadable">;
}

/** The usual cgroup v2 mounts: unified, then hybrid. */
export const CGROUP_ROOTS: readonly string[] = ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"];

/**
 * The cgroup v2 mounts to try under a host cgroup tree mounted elsewhere.
 *
 * @param root Where the host's `/sys/fs/cgroup` is mounted; "": there.
 * @returns The tree itself (unified host), then its `unified/` (hybrid host).
 */
export function cgroupRootsAt(root: string): readonly string[] {
  const at = root.replace(/\/+$/, "");
  return at === "" ? CGROUP_ROOTS : [at, `${at}/unified`];
}

/** Largest PID Linux allows (`PID_MAX_LIMIT`). */
const PID_MAX = 4_194_304;

interface Built {
  readonly from: readonly RunningContainerProcess[];
  readonly byPath: Map<string, ContainerOfProcess>;
  /** By the last name of the directory: paths a cgroup namespace shows relative. */
  readonly byName: Map<string, ContainerOfProcess[]>;
  readonly byInode: Map<number, ContainerOfProcess>;
  readonly byMntns: Map<number, ContainerOfProcess>;
}

function isMissing(err: unknown): boolean {
  return err instanceof Deno.errors.NotFound;
}

/** Out of file descriptors: the process' (EMFILE) or the system's (ENFILE). */
function isExhausted(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === "EMFILE" || code === "ENFILE";
}

function isDenied(err: unknown): boolean {
  return err instanceof Deno.errors.PermissionDenied || err instanceof Deno.errors.NotCapable;
}

/** The inode of `mnt:[4026531840]`. */
function nsInode(link: string): number {
  const m = /^[a-z_]+:\[(\d+)\]$/.exec(link);
  return m === null ? 0 : Number(m[1]);
}

/**
 * The cgroup v2 path in `/proc/PID/cgroup` text (the `0::` line), or
 * `undefined` on a host without cgroup v2.
 *
 * @param text The file's text.
 * @returns The path, e.g. `/kubepods/besteffort/pod1/abc`.
 */
export function unifiedCgroupOf(text: string): string | undefined {
  for (const line of text.split("\n")) {
    if (line.startsWith("0::")) return line.slice(3);
  }
  return undefined;
}

/**
 * Lookups of a process' container, from an index of the running
 * containers' cgroups and namespaces.
 *
 * @example Usage
 * ```ts ignore
 * const index = new ProcessIndex(criSource);
 * index.lookup({ kind: "pid", pid: 4242 }); // { containerId, podUid, ... }
 * ```
 */
export class ProcessIndex {
  readonly #source: ContainerProcessSource;
  readonly #fs: ProcFs;
  readonly #proc: string;
  readonly #roots: readonly string[];
  readonly #metrics: ProcessIndexOptions["metrics"];
  #root: string | undefined;
  #built: Built | undefined;
  /** Per container ID and PID: what its directory and namespace were read as. */
  #memo = new Map<string, ContainerOfProcess>();

  /**
   * @param source The running containers and their init processes.
   * @param options The file system, `/proc` and the cgroup mounts.
   */
  constructor(source: ContainerProcessSource, options: ProcessIndexOptions = {}) {
    this.#source = source;
    this.#fs = options.fs ?? hostProcFs;
    this.#proc = options.procRoot ?? "/proc";
    this.#roots = options.cgroupRoots ?? CGROUP_ROOTS;
    this.#metrics = options.metrics;
  }

  /**
   * The container a process is in.
   *
   * @param key A host PID, cgroup ID, cgroup path or mount namespace inode.
   * @returns Its container.
   * @throws {ProcessLookupError} `invalid`, `not_found`, `unavailable`
   *   (`/proc` or the cgroup tree not readable) or `exhausted` (no file
   *   descriptor left).
   */
  lookup(key: ProcessKey): ContainerOfProcess {
    try {
      const found = this.#lookup(key);
      this.#metrics?.processLookups.inc({ outcome: "found" });
      return found;
    } catch (err) {
      if (err instanceof ProcessLookupError) {
        this.#metrics?.processLookups.inc({ outcome: err.reason });
      }
      throw err;
    }
  }

  #lookup(key: ProcessKey): ContainerOfProcess {
    checkKey(key);
    const built = this.#index();
    switch (key.kind) {
      case "pid":
        return this.#byPid(key.pid, built);
      case "cgroupId": {
        const found = built.byInode.get(key.cgroupId);
        if (found === undefined) {
          throw new ProcessLookupError(
            "not_found",
            `No container of a pod has cgroup ID "${key.cgroupId}"`,
          );
        }
        return found;
      }
      case "cgroupPath": {
        const path = this.#relative(key.path);
        const found = walkUp(path, built.byPath);
        if (found === undefined) {
          throw new ProcessLookupError(
            "not_found",
            `Cgroup ${JSON.stringify(key.path)} is not in a container of any pod`,
          );
        }
        return found;
      }
      case "mntns": {
        const found = built.byMntns.get(key.inode);
        if (found === undefined) {
          throw new ProcessLookupError(
            "not_found",
            `No container of a pod has mount namespace "${key.inode}"`,
          );
        }
        return found;
      }
    }
  }

  #byPid(pid: number, built: Built): ContainerOfProcess {
    let text: string;
    try {
      text = this.#fs.readText(`${this.#proc}/${pid}/cgroup`);
    } catch (err) {
      if (isMissing(err)) {
        throw new ProcessLookupError("not_found", `No process with PID "${pid}" on this node`);
      }
      throw this.#unreadable(`${this.#proc}/${pid}/cgroup`, err);
    }
    const path = unifiedCgroupOf(text);
    if (path === undefined) {
      throw new ProcessLookupError(
        "unavailable",
        `No cgroup v2 hierarchy in ${this.#proc}/${pid}/cgroup: mount cgroup2 (hybrid: at /sys/fs/cgroup/unified)`,
      );
    }
    const found = path.startsWith("/../")
      ? walkUpRelative(path, built)
      : walkUp(path, built.byPath);
    if (found === undefined) {
      throw new ProcessLookupError(
        "not_found",
        `Process "${pid}" is not in a container of any pod (cgroup ${JSON.stringify(path)})`,
      );
    }
    return found;
  }

  /** A cgroup path as `/proc/PID/cgroup` shows it, from that or a path under the mount. */
  #relative(path: string): string {
    const root = this.#cgroupRoot();
    // The host spells the mount /sys/fs/cgroup[/unified] wherever the daemon has it.
    const host = root.endsWith("/unified") ? "/sys/fs/cgroup/unified" : "/sys/fs/cgroup";
    for (const prefix of [root, host]) {
      if (path === prefix) return "/";
      if (path.startsWith(`${prefix}/`)) return path.slice(prefix.length);
    }
    const tree = root.endsWith("/unified") ? root.slice(0, -"/unified".length) : root;
    if (path.startsWith("/sys/fs/cgroup") || path.startsWith(tree)) {
      throw new ProcessLookupError(
        "invalid",
        `Cgroup path ${JSON.stringify(path)} is outside the cgroup v2 root "${host}"`,
      );
    }
    return path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
  }

  #unreadable(path: string, err: unknown): ProcessLookupError {
    if (isExhausted(err)) {
      return new ProcessLookupError(
        "exhausted",
        `Cannot open ${JSON.stringify(path)}: the daemon has no file descriptor left (${
          (err as Error).message
        }); retry later, or raise its descriptor limit (LimitNOFILE)`,
      );
    }
    const what = path.startsWith(this.#proc)
      ? `the host's ${this.#proc} (hostPID: true, and read permission on ${this.#proc})`
      : `the cgroup tree (a read-only mount of /sys/fs/cgroup, and read permission on it)`;
    if (err instanceof Deno.errors.NotCapable) {
      return new ProcessLookupError(
        "unavailable",
        `Cannot read ${
          JSON.stringify(path)
        }: Deno reads /proc and /sys only under --allow-all; mount the host's /proc and cgroup tree elsewhere and name them with --host-proc and --host-cgroup-root`,
      );
    }
    const why = isDenied(err) ? "permission denied" : (err as Error).message;
    return new ProcessLookupError(
      "unavailable",
      `Cannot read ${JSON.stringify(path)} (${why}): grant ${what}`,
    );
  }

  #cgroupRoot(): string {
    if (this.#root !== undefined) return this.#root;
    let denied: { path: string; err: unknown } | undefined;
    for (const root of this.#roots) {
      try {
        this.#fs.inode(`${root}/cgroup.controllers`);
        return this.#root = root;
      } catch (err) {
        if (isExhausted(err)) throw this.#unreadable(`${root}/cgroup.controllers`, err);
        if (isDenied(err)) denied ??= { path: root, err };
      }
    }
    if (denied !== undefined) throw this.#unreadable(denied.path, denied.err);
    throw new ProcessLookupError(
      "unavailable",
      `No cgroup v2 hierarchy at ${
        this.#roots.map((r) => JSON.stringify(r)).join(" or ")
      }: mount the host's cgroup tree read-only`,
    );
  }

  /** The index of the source's current containers, rebuilt when they changed. */
  #index(): Built {
    const from = this.#source.containerProcesses();
    if (this.#built?.from === from) return this.#built;
    const root = this.#cgroupRoot();
    const byPath = new Map<string, ContainerOfProcess>();
    const byName = new Map<string, ContainerOfProcess[]>();
    const byInode = new Map<number, ContainerOfProcess>();
    const byMntns = new Map<number, ContainerOfProcess>();
    const memo = new Map<string, ContainerOfProcess>();
    let procMissing = 0;
    for (const p of from) {
      const key = `${p.containerId}/${p.pid}`;
      let entry = this.#memo.get(key);
      if (entry === undefined) {
        const read = this.#read(p, root);
        if (read === "missing") {
          procMissing++;
          continue;
        }
        entry = read;
      }
      memo.set(key, entry);
      byPath.set(entry.cgroupPath, entry);
      const name = entry.cgroupPath.slice(entry.cgroupPath.lastIndexOf("/") + 1);
      const named = byName.get(name);
      if (named === undefined) byName.set(name, [entry]);
      else named.push(entry);
      if (entry.cgroupId !== 0) byInode.set(entry.cgroupId, entry);
      if (entry.mntns !== 0) byMntns.set(entry.mntns, entry);
    }
    if (from.length > 0 && procMissing === from.length) {
      // Not one container's init process is visible: not the host's PID namespace.
      throw new ProcessLookupError(
        "unavailable",
        `No container's init process is visible in ${this.#proc}: run in the host's PID namespace (hostPID: true)`,
      );
    }
    this.#memo = memo;
    // Not kept when incomplete: a later lookup reads what was missing again.
    const built = { from, byPath, byName, byInode, byMntns };
    if (procMissing === 0) this.#built = built;
    return built;
  }

  /**
   * The mount namespace inode of a process, or 0 when the kernel will not
   * say: a process of another user needs CAP_SYS_PTRACE. That container is
   * then not found by namespace (counted), and is by everything else.
   */
  #mountNamespace(procDir: string): number {
    try {
      return nsInode(this.#fs.readLink(`${procDir}/ns/mnt`));
    } catch (err) {
      if (!(err instanceof Deno.errors.PermissionDenied)) throw err;
      this.#metrics?.processNamespacesUnreadable.inc();
      return 0;
    }
  }

  /** One container's directory, its inode and its namespace, or `missing` when its process left. */
  #read(p: RunningContainerProcess, root: string): ContainerOfProcess | "missing" {
    const procDir = `${this.#proc}/${p.pid}`;
    let cgroupPath = cgroupDirOf(p.cgroupsPath);
    let cgroupId = 0;
    const statDir = (dir: string) => {
      try {
        return this.#fs.inode(`${root}${dir === "/" ? "" : dir}`);
      } catch (err) {
        if (isMissing(err)) return 0;
        throw this.#unreadable(`${root}${dir}`, err);
      }
    };
    if (cgroupPath !== undefined) cgroupId = statDir(cgroupPath);
    let mntns = 0;
    try {
      if (cgroupId === 0) {
        // The spec's path is not a v2 directory here: the kernel's word for the init process.
        cgroupPath = unifiedCgroupOf(this.#fs.readText(`${procDir}/cgroup`));
        if (cgroupPath !== undefined) cgroupId = statDir(cgroupPath);
      }
      mntns = this.#mountNamespace(procDir);
    } catch (err) {
      if (isMissing(err)) return "missing";
      if (err instanceof ProcessLookupError) throw err;
      throw this.#unreadable(procDir, err);
    }
    if (cgroupPath === undefined) return "missing";
    return {
      containerId: p.containerId,
      podUid: p.podUid,
      initPid: p.pid,
      cgroupPath,
      cgroupId,
      mntns,
    };
  }
}

/**
 * The entry of a path a cgroup namespace shows relative to its own root
 * (`/../../podX/abc`, when the daemon runs in a container with a cgroup
 * namespace of its own): what follows the `..` steps is the end of the
 * host path; the entry whose path ends so, for that or the nearest
 * directory above it.
 */
function walkUpRelative(path: string, built: Built): ContainerOfProcess | undefined {
  let at = path.replace(/^(\/\.\.)+/, "");
  while (at.length > 1) {
    const name = at.slice(at.lastIndexOf("/") + 1);
    const found = built.byName.get(name)?.filter((e) => e.cgroupPath.endsWith(at));
    // Two containers ending alike (not seen with runtime-made IDs): no guess.
    if (found?.length === 1) return found[0];
    const cut = at.lastIndexOf("/");
    at = cut <= 0 ? "/" : at.slice(0, cut);
  }
  return undefined;
}

/** The entry of `path` or of the nearest directory above it. */
function walkUp(
  path: string,
  byPath: ReadonlyMap<string, ContainerOfProcess>,
): ContainerOfProcess | undefined {
  let at = path;
  while (at.length > 1) {
    const found = byPath.get(at);
    if (found !== undefined) return found;
    const cut = at.lastIndexOf("/");
    at = cut <= 0 ? "/" : at.slice(0, cut);
  }
  return undefined;
}

function checkKey(key: ProcessKey): void {
  const bad = (what: string, value: number | string) =>
    new ProcessLookupError(
      "invalid",
      `Cannot look up a process by ${what} ${JSON.stringify(String(value))}`,
    );
  switch (key.kind) {
    case "pid":
      if (!Number.isSafeInteger(key.pid) || key.pid <= 0 || key.pid > PID_MAX) {
        throw bad("PID", key.pid);
      }
      return;
    case "cgroupId":
      if (!Number.isSafeInteger(key.cgroupId) || key.cgroupId <= 0) {
        throw bad("cgroup ID", key.cgroupId);
      }
      return;
    case "mntns":
      if (!Number.isSafeInteger(key.inode) || key.inode <= 0) {
        throw bad("mount namespace inode", key.inode);
      }
      return;
    case "cgroupPath":
      if (!key.path.startsWith("/") || key.path.split("/").some((s) => s === ".." || s === ".")) {
        throw bad("cgroup path", key.path);
      }
      if (key.path.includes("\0")) throw bad("cgroup path", key.path);
      return;
  }
}
