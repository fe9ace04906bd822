/**
 * `pods-api get`: one pod, named by UID, NS/NAME, a container ID or a pod
 * IP, looked up by the daemon (PodQuery) or, on a kubelet's socket, among
 * the listed pods; `--deleted` also finds the last state of a deleted pod.
 *
 * @module
 */

import { GrpcError, STATUS } from "../grpc/status.ts";
import type { PodObject } from "../model/pod.ts";
import { bareContainerId, MIN_CONTAINER_ID_PREFIX } from "../query/mod.ts";
import { type ParsedFlags, stringFlag, switchFlag, UsageError } from "./cli_flags.ts";
import { CLIENT_EXIT, type CliIo } from "./cli_io.ts";
import { isUnimplemented, podCommandSetup, printRendering } from "./pod_command_setup.ts";
import { lookUpPod, splitName } from "./pod_lookup.ts";
import { renderPods, withResourceVersion } from "./pod_output.ts";
import { type PodKey, PodQueryClient } from "./pod_query_client.ts";
import type { PodsClient } from "./pods_client.ts";

const UID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** What `get` was asked for: one of a container ID, a pod IP, or a key (UID or name). */
interface GetTarget {
  containerId: string | undefined;
  ip: string | undefined;
  namespace: string | undefined;
  key: string | undefined;
}

function getTarget(flags: ParsedFlags): GetTarget {
  return {
    containerId: stringFlag(flags, "container-id"),
    ip: stringFlag(flags, "ip"),
    namespace: stringFlag(flags, "namespace"),
    key: flags.positionals[0],
  };
}

/** The pod a `get` names, among pods listed from a kubelet-shaped service. */
function lookUp(pods: readonly PodObject[], target: GetTarget): PodObject {
  const { containerId, ip, namespace, key } = target;
  return lookUpPod(pods, {
    ...(containerId === undefined ? {} : { containerId }),
    ...(ip === undefined ? {} : { ip }),
    ...(namespace === undefined ? {} : { namespace }),
    ...(key === undefined ? {} : { key }),
  });
}

/**
 * The PodQuery key of a target, or `undefined` for a key that is neither a
 * UID nor a namespaced name (a static pod's hash UID, or a name in any
 * namespace), which the kubelet's own `GetPod` tries first.
 */
function queryKey(target: GetTarget, deleted: boolean): PodKey | undefined {
  const { containerId, ip, namespace } = target;
  const key = target.key!;
  if (containerId !== undefined) return { kind: "containerId", id: containerId };
  if (ip !== undefined) return { kind: "podIp", ip };
  if (UID_PATTERN.test(key)) return { kind: "uid", uid: key };
  if (key.includes("/") || namespace !== undefined) {
    const [ns, name] = splitName(key, namespace);
    return { kind: "name", namespace: ns, name };
  }
  // A UID in another spelling (a static pod's is a hash): tombstones are kept by UID.
  return deleted ? { kind: "uid", uid: key } : undefined;
}

/** The pod and whether it is a deleted pod's last state. */
async function findPod(
  client: PodsClient,
  target: GetTarget,
  deleted: boolean,
  signal: AbortSignal,
): Promise<{ pod: PodObject; tombstone: boolean }> {
  const key = target.key!;
  const lookup = queryKey(target, deleted);
  if (lookup === undefined) {
    try {
      // A UID in another spelling (a static pod's is a hash), else a name in any namespace.
      return { pod: await client.getPod(key, { signal }), tombstone: false };
    } catch (err) {
      const miss = err instanceof GrpcError &&
        (err.code === STATUS.NOT_FOUND || err.code === STATUS.INVALID_ARGUMENT);
      if (!miss) throw err;
      return { pod: lookUp(await client.listPods({ signal }), target), tombstone: false };
    }
  }
  try {
    const found = await new PodQueryClient(client).get(lookup, { signal, includeDeleted: deleted });
    return { pod: withResourceVersion(found.pod, found.resumeToken), tombstone: found.deleted };
  } catch (err) {
    if (!isUnimplemented(err)) throw err;
  }
  if (deleted) {
    throw new GrpcError(
      STATUS.UNIMPLEMENTED,
      "--deleted needs a pods-api daemon; this socket serves only the kubelet's Pods API (no podsapi.v1.PodQuery), which keeps no deleted pods",
    );
  }
  if (lookup.kind === "uid") {
    // The kubelet's own call: any Pods API socket answers it.
    return { pod: await client.getPod(key, { signal }), tombstone: false };
  }
  return { pod: lookUp(await client.listPods({ signal }), target), tombstone: false };
}

/** Runs `pods-api get`: the exit code, or a UsageError for no pod or several named, a bad flag. */
export async function getCommand(flags: ParsedFlags, io: CliIo): Promise<number> {
  const target = getTarget(flags);
  const keys = [
    flags.positionals.length > 0,
    target.containerId !== undefined,
    target.ip !== undefined,
  ].filter(Boolean).length;
  if (keys === 0) {
    throw new UsageError("name a pod: UID, NS/NAME, -n NS NAME, --container-id ID or --ip IP");
  }
  if (keys > 1 || flags.positionals.length > 1) {
    throw new UsageError("name one pod: one of UID, NS/NAME, --container-id, --ip");
  }
  const setup = podCommandSetup("get", flags, io);
  using client = setup.client;
  const { containerId } = target;
  if (containerId !== undefined && bareContainerId(containerId).length < MIN_CONTAINER_ID_PREFIX) {
    throw new UsageError(
      `flag --container-id: "${containerId}" is too short; give the full ID or at least ${MIN_CONTAINER_ID_PREFIX} characters`,
    );
  }
  const { pod, tombstone } = await findPod(
    client,
    target,
    switchFlag(flags, "deleted"),
    io.signal,
  );
  if (tombstone) {
    const at = pod.metadata.deletionTimestamp;
    io.err(
      `pods-api get: pod ${pod.metadata.namespace}/${pod.metadata.name} was deleted${
        at === undefined ? "" : ` at ${at}`
      }; this is its last state`,
    );
  }
  printRendering(
    io,
    setup.format,
    renderPods([pod], {
      format: setup.format,
      columns: setup.columns,
      now: io.now(),
      mask: setup.mask,
      noHeaders: switchFlag(flags, "no-headers"),
      single: true,
    }),
  );
  return CLIENT_EXIT.ok;
}
