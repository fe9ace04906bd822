/**
 * A simulated host `/proc` and cgroup v2 tree for the simulated runtime's
 * containers, so the process lookups run on a simulated node as on a real
 * one: each running container's init PID has `/proc/PID/cgroup` naming its
 * cgroup directory and `/proc/PID/ns/mnt` naming a mount namespace of its
 * own. It counts the reads under `/proc`, which a test uses to show that a
 * lookup reads the one process it is asked about.
 *
 * @module
 */

import type { ProcFs } from "../../sources/process/mod.ts";
import { fnvHex } from "./_runtime_records.ts";
import type { SimCriRuntime } from "./cri_runtime.ts";

/** Where the simulated cgroup v2 tree is mounted. */
export const SIM_CGROUP_ROOT = "/sys/fs/cgroup";

/** The initial mount namespace's inode on Linux; simulated ones follow it. */
const FIRST_MNTNS = 4_026_531_840;

/** `/proc/<pid>/<rest>` */
const PROC_PATH = /^\/proc\/(\d+)\/(cgroup|ns\/mnt)$/;

/**
 * The simulated `/proc` and cgroup tree of a {@linkcode SimCriRuntime}.
 *
 * @example Usage
 * ```ts ignore
 * const fs = new SimProcFs(runtime);
 * new ProcessIndex(source, { fs, cgroupRoots: [SIM_CGROUP_ROOT] });
 * ```
 */
export class SimProcFs implements ProcFs {
  readonly #runtime: Pick<SimCriRuntime, "processOf">;
  /** Files and links read under `/proc` since creation. */
  procReads = 0;

  /** @param runtime The simulated runtime whose containers' processes it shows. */
  constructor(runtime: Pick<SimCriRuntime, "processOf">) {
    this.#runtime = runtime;
  }

  /** `/proc/PID/cgroup` of a running container's init process. */
  readText(path: string): string {
    const { dir } = this.#process(path, "cgroup");
    return `0::${dir}\n`;
  }

  /** `/proc/PID/ns/mnt` of a running container's init process. */
  readLink(path: string): string {
    const { pid } = this.#process(path, "ns/mnt");
    return `mnt:[${FIRST_MNTNS + pid}]`;
  }

  /** The inode of the cgroup root's `cgroup.controllers` or of a directory under the root. */
  inode(path: string): number {
    if (path === `${SIM_CGROUP_ROOT}/cgroup.controllers`) return 1;
    if (!path.startsWith(`${SIM_CGROUP_ROOT}/kubepods/`)) throw new Deno.errors.NotFound(path);
    return parseInt(fnvHex(path, 12), 16);
  }

  #process(path: string, file: string): { pid: number; dir: string } {
    const m = PROC_PATH.exec(path);
    if (m !== null) this.procReads++;
    if (m === null || m[2] !== file) throw new Deno.errors.NotFound(path);
    const pid = Number(m[1]);
    const found = this.#runtime.processOf(pid);
    if (found === undefined) throw new Deno.errors.NotFound(path);
    return { pid, dir: found.cgroupDir };
  }
}
