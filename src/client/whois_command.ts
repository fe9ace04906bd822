/**
 * `pods-api whois`: which pod and container a process is in, from what an
 * agent watching the kernel holds (a host PID, a cgroup ID, a cgroup path,
 * a mount namespace inode), in one PodQuery `Get`.
 *
 * @module
 */

import { outputFlag, type ParsedFlags, stringFlag, switchFlag, UsageError } from "./cli_flags.ts";
import { renderDocument } from "./pod_output.ts";
import { alignColumns } from "./pod_table.ts";
import { type PodKey, PodQueryClient } from "./pod_query_client.ts";
import type { PodsClient } from "./pods_client.ts";
import { GrpcError, STATUS } from "../grpc/status.ts";
import { EMPTY_PROCESS_CONTAINER } from "../proto/pod_query_wire.ts";
import { REFUSAL_MESSAGES } from "../serving/refusal.ts";

/** What the command writes to. */
export interface WhoisIo {
  out(text: string): void;
  signal: AbortSignal;
}

const OUTPUTS = ["table", "json", "yaml"] as const;

/** A positive decimal integer, or a UsageError naming the value. */
function positive(what: string, text: string): number {
  const n = /^[0-9]+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n) || n <= 0) {
    throw new UsageError(`${what} must be a positive integer; got "${text}"`);
  }
  return n;
}

/**
 * The lookup key the arguments name (exactly one of PID, `--cgroup-id`,
 * `--cgroup`, `--mntns`).
 *
 * @param flags The parsed flags.
 * @returns The key.
 * @throws {UsageError} For none, more than one, or a value that is not one.
 */
export function whoisKey(flags: ParsedFlags): PodKey {
  const keys: PodKey[] = [];
  for (const pid of flags.positionals) keys.push({ kind: "pid", pid: positive("PID", pid) });
  const cgroupId = stringFlag(flags, "cgroup-id");
  if (cgroupId !== undefined) {
    keys.push({ kind: "cgroupId", cgroupId: positive("--cgroup-id", cgroupId) });
  }
  const cgroup = stringFlag(flags, "cgroup");
  if (cgroup !== undefined) keys.push({ kind: "cgroupPath", path: cgroup });
  const mntns = stringFlag(flags, "mntns");
  if (mntns !== undefined) keys.push({ kind: "mntns", inode: positive("--mntns", mntns) });
  if (keys.length !== 1) {
    throw new UsageError(
      `name one process: a PID, --cgroup-id, --cgroup or --mntns (got ${keys.length})`,
    );
  }
  return keys[0]!;
}

/** The words of the serving core's own refusals (syncing, shutting down), which keep their meaning. */
const REFUSALS: ReadonlySet<string> = new Set(Object.values(REFUSAL_MESSAGES));

/**
 * What a failed lookup says to a person. The daemon answers
 * FAILED_PRECONDITION when this node cannot look up processes (a grant or
 * mount missing) and UNAVAILABLE when it had no file descriptor left: both
 * with a message naming what to do, which the generic words for those codes
 * ("still syncing", "lost the daemon") would hide.
 *
 * @param err What the call threw.
 * @returns The error to report.
 */
export function lookupError(err: unknown): unknown {
  if (!(err instanceof GrpcError) || REFUSALS.has(err.message)) return err;
  if (err.code === STATUS.FAILED_PRECONDITION) {
    return new Error(`Process lookups cannot answer on this node: ${err.message}`);
  }
  if (err.code === STATUS.UNAVAILABLE && !err.message.startsWith("Cannot connect to")) {
    return new Error(`The daemon could not look the process up now: ${err.message}`);
  }
  return err;
}

/**
 * Runs `pods-api whois`.
 *
 * @param flags The parsed flags.
 * @param io Output and interrupt.
 * @param client A connection to the daemon.
 * @returns The exit code (0).
 * @throws {UsageError} For bad arguments.
 * @throws {GrpcError} What the daemon answered (NOT_FOUND: not in a pod's container).
 */
export async function whoisCommand(
  flags: ParsedFlags,
  io: WhoisIo,
  client: PodsClient,
): Promise<number> {
  const output = outputFlag(flags, OUTPUTS);
  const key = whoisKey(flags);
  const fields = stringFlag(flags, "fields")?.split(",").filter((f) => f !== "");
  const query = new PodQueryClient(client);
  const { pod, container } = await query.get(key, {
    signal: io.signal,
    ...(fields === undefined ? {} : { fields: ["metadata.name", "metadata.namespace", ...fields] }),
  }).catch((err) => {
    throw lookupError(err);
  });
  const c = container ?? EMPTY_PROCESS_CONTAINER;
  if (output !== "table") {
    const doc = { kind: "ProcessOwner", container: c, pod };
    io.out(renderDocument(doc, output));
    return 0;
  }
  const rows = [
    ["NAMESPACE", "POD", "CONTAINER", "CONTAINER ID", "KIND", "CGROUP ID"],
    [
      pod.metadata.namespace ?? "",
      pod.metadata.name ?? "",
      c.name,
      c.containerId,
      c.init ? "init" : c.ephemeral ? "ephemeral" : "container",
      String(c.cgroupId),
    ],
  ];
  io.out(alignColumns(switchFlag(flags, "no-headers") ? rows.slice(1) : rows).join("\n"));
  return 0;
}
