/**
 * The real runtime under test, as `scripts/real_cri/run_test.sh` names it:
 * its socket, up.sh's state directory, the image its pods run, and whether
 * it streams its container events with statuses (containerd 1.7+, CRI-O).
 *
 * @module
 */

import { dirname } from "node:path";
import { CriClient } from "../../src/sources/cri/mod.ts";

/** The runtime's socket; `undefined`: no real runtime, the tests are ignored. */
export const SOCKET: string | undefined = Deno.env.get("PODS_API_REAL_CRI_SOCKET");
/** up.sh's state directory (default: `<socket dir>/state`). */
export const STATE: string = Deno.env.get("PODS_API_REAL_CRI_STATE") ??
  (SOCKET === undefined ? "" : `${dirname(SOCKET)}/state`);
/** The busybox-static image up.sh imports. */
export const BUSYBOX = "localhost/real-cri/busybox:1";

/** What the runtime is, and whether it streams events with statuses. */
export interface RuntimeEvents {
  /** `<name> <version>`, or `none` without a socket. */
  readonly version: string;
  readonly streams: boolean;
  /**
   * Set by run_test.sh on its containerd 1.7 run
   * (`PODS_API_REAL_CRI_EXPECT_EVENTS=1`): a runtime without the stream
   * fails the event tests instead of skipping them.
   */
  readonly expected: boolean;
}

/**
 * Asks the runtime its version.
 *
 * @param socket The runtime's socket; `undefined`: no runtime under test.
 * @returns Its version and whether it streams events.
 */
export async function runtimeEvents(socket: string | undefined): Promise<RuntimeEvents> {
  const expected = Deno.env.get("PODS_API_REAL_CRI_EXPECT_EVENTS") === "1";
  if (socket === undefined) return { version: "none", streams: false, expected };
  const client = new CriClient(socket);
  try {
    const v = await client.version();
    const [major, minor] = v.runtimeVersion.replace(/^v/, "").split(".").map(Number);
    const streams = v.runtimeName !== "containerd" || major! > 1 || (major === 1 && minor! >= 7);
    return { version: `${v.runtimeName} ${v.runtimeVersion}`, streams, expected };
  } finally {
    client.close();
  }
}
