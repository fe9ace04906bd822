/**
 * The simulated runtime's host process table: each started container's init
 * process gets a host PID, never reused, so a simulated `/proc` can map a PID
 * back to its container as the real kernel's would.
 *
 * @module
 */

import { CONTAINER_STATE } from "../../sources/cri/mod.ts";
import { simCgroupDir, type SimContainer, type SimSandbox } from "./_runtime_records.ts";

/** Where simulated init PIDs start: above what a host's own daemons take. */
const FIRST_PID = 100_000;

/** Init PIDs of one simulated runtime's started containers. */
export class SimProcessTable {
  readonly #sandboxes: ReadonlyMap<string, SimSandbox>;
  readonly #containers: ReadonlyMap<string, SimContainer>;
  /** The host PID the next started container's init process gets. */
  #nextPid = FIRST_PID;
  /** Started containers by init PID; entries of exited or removed ones are pruned as it grows. */
  readonly #byPid = new Map<number, SimContainer>();

  /**
   * @param sandboxes The runtime's sandboxes (for a process's pod UID).
   * @param containers The runtime's containers (a removed one has no process).
   */
  constructor(
    sandboxes: ReadonlyMap<string, SimSandbox>,
    containers: ReadonlyMap<string, SimContainer>,
  ) {
    this.#sandboxes = sandboxes;
    this.#containers = containers;
  }

  /**
   * Gives a container that has just started its init PID.
   *
   * @param c The container, now RUNNING.
   */
  start(c: SimContainer): void {
    c.pid = this.#nextPid++;
    this.#byPid.set(c.pid, c);
    if (this.#byPid.size > 2 * this.#containers.size + 16) this.#prune();
  }

  /**
   * The running container whose init process has this host PID.
   *
   * @param pid A host PID.
   * @returns The container, its pod's UID and its cgroup directory, or `undefined`.
   */
  processOf(pid: number): { containerId: string; podUid: string; cgroupDir: string } | undefined {
    const c = this.#byPid.get(pid);
    if (!this.#alive(c)) return undefined;
    const podUid = this.#sandboxes.get(c.sandboxId)?.uid ?? "";
    return { containerId: c.id, podUid, cgroupDir: simCgroupDir(podUid, c.id) };
  }

  #alive(c: SimContainer | undefined): c is SimContainer {
    return c !== undefined && c.state === CONTAINER_STATE.running &&
      this.#containers.get(c.id) === c;
  }

  #prune(): void {
    for (const [pid, c] of this.#byPid) if (!this.#alive(c)) this.#byPid.delete(pid);
  }
}
