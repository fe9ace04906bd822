/**
 * Finding the pod a `pods-api get` names among listed pods, for services
 * that cannot look pods up themselves (the kubelet-shaped ones): by
 * container ID, by pod IP, or by name.
 *
 * @module
 */

import { GrpcError, STATUS } from "../grpc/status.ts";
import type { PodObject } from "../model/pod.ts";
import { bareContainerId, MIN_CONTAINER_ID_PREFIX, normalizeIp } from "../query/mod.ts";
import { UsageError } from "./cli_flags.ts";

function containerIds(pod: PodObject): string[] {
  const status = pod.status ?? {};
  const ids: string[] = [];
  for (const key of ["initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses"]) {
    const list = status[key];
    if (!Array.isArray(list)) continue;
    for (const cs of list) {
      const id = (cs as { containerID?: unknown }).containerID;
      if (typeof id === "string" && id !== "") ids.push(bareContainerId(id));
    }
  }
  return ids;
}

function podIps(pod: PodObject): string[] {
  const status = pod.status ?? {};
  const ips = Array.isArray(status.podIPs)
    ? status.podIPs.map((p) => (p as { ip?: unknown }).ip).filter((ip) => typeof ip === "string")
    : [];
  if (typeof status.podIP === "string") ips.push(status.podIP);
  return (ips as string[]).map((ip) => normalizeIp(ip) ?? ip);
}

function describePods(pods: readonly PodObject[]): string {
  return pods.map((p) => `${p.metadata.namespace}/${p.metadata.name}`).join(", ");
}

/**
 * Reads NS/NAME, or NAME with -n NS, as a namespace and a name.
 *
 * @param key NAME or NS/NAME.
 * @param namespace `-n`, if given.
 * @returns The namespace and the name.
 * @throws {UsageError} For a malformed key or one that contradicts `-n`.
 */
export function splitName(key: string, namespace: string | undefined): [string, string] {
  if (!key.includes("/")) return [namespace!, key];
  const [a, b, ...more] = key.split("/");
  if (!a || !b || more.length > 0) throw new UsageError(`cannot read "${key}" as NS/NAME`);
  if (namespace !== undefined && namespace !== a) {
    throw new UsageError(`"${key}" names namespace "${a}" but -n says "${namespace}"`);
  }
  return [a, b];
}

/** What `get` names a pod by: one of a container ID, an IP, or NAME / NS/NAME. */
export interface PodLookup {
  /** A container ID, full or a prefix of at least {@linkcode MIN_CONTAINER_ID_PREFIX}. */
  readonly containerId?: string;
  /** A pod IP (not of a host-network pod). */
  readonly ip?: string;
  /** `-n`: the namespace of a bare NAME. */
  readonly namespace?: string;
  /** NAME or NS/NAME. */
  readonly key?: string;
}

/**
 * Finds the pod a `get` names, among pods listed from a kubelet-shaped
 * service (one that cannot look pods up itself): by container ID (exact,
 * else a unique prefix), by IP (the newest pod holding it), or by name (the
 * newest pod of that name, in one namespace).
 *
 * @param pods Every pod the service listed.
 * @param lookup What names the pod.
 * @returns The pod.
 * @throws {UsageError} For an ambiguous or too short key.
 * @throws {GrpcError} NOT_FOUND when no pod matches.
 */
export function lookUpPod(pods: readonly PodObject[], lookup: PodLookup): PodObject {
  const { containerId, ip, namespace, key } = lookup;
  if (containerId !== undefined) {
    const id = bareContainerId(containerId);
    const exact = pods.filter((p) => containerIds(p).includes(id));
    if (exact.length === 1) return exact[0]!;
    if (id.length < MIN_CONTAINER_ID_PREFIX) {
      throw new UsageError(
        `flag --container-id: "${containerId}" is too short; give the full ID or at least ${MIN_CONTAINER_ID_PREFIX} characters`,
      );
    }
    const found = pods.filter((p) => containerIds(p).some((c) => c.startsWith(id)));
    if (found.length > 1) {
      throw new UsageError(
        `flag --container-id: prefix "${id}" matches containers of ${describePods(found)}`,
      );
    }
    if (found.length === 0) {
      throw new GrpcError(STATUS.NOT_FOUND, `pod with container ID "${containerId}" not found`);
    }
    return found[0]!;
  }
  if (ip !== undefined) {
    const want = normalizeIp(ip) ?? ip.trim();
    const found = pods.filter((p) => p.spec?.hostNetwork !== true && podIps(p).includes(want));
    if (found.length === 0) throw new GrpcError(STATUS.NOT_FOUND, `pod with IP "${ip}" not found`);
    return found.sort((a, b) =>
      (b.metadata.creationTimestamp ?? "").localeCompare(a.metadata.creationTimestamp ?? "")
    )[0]!;
  }
  const [ns, name] = key!.includes("/") || namespace !== undefined
    ? splitName(key!, namespace)
    : [undefined, key!];
  const found = pods.filter((p) =>
    p.metadata.name === name && (ns === undefined || p.metadata.namespace === ns)
  );
  if (found.length === 0) {
    throw new GrpcError(
      STATUS.NOT_FOUND,
      ns === undefined
        ? `pod with name "${name}" not found in any namespace`
        : `pod with name "${ns}/${name}" not found`,
    );
  }
  const namespaces = new Set(found.map((p) => p.metadata.namespace));
  if (namespaces.size > 1) {
    throw new UsageError(
      `pod name "${name}" is in several namespaces (${describePods(found)}): use NS/NAME`,
    );
  }
  // A name reused after a delete: the newest pod.
  return found.sort((a, b) =>
    (b.metadata.creationTimestamp ?? "").localeCompare(a.metadata.creationTimestamp ?? "")
  )[0]!;
}
