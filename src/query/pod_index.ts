/**
 * Secondary indexes over pods: namespace/name, container ID (full, or a
 * unique prefix of at least 12 characters, as crictl takes) and pod IP.
 * Kept in step with the cache by the query engine, one event at a time; only
 * a change of a pod's keys touches the maps.
 *
 * @module
 */

import type { CachedPod } from "../cache/types.ts";
import { isJsonObject, type JsonObject, type JsonValue, objectOf } from "../model/json.ts";
import type { PodObject, PodUid } from "../model/pod.ts";
import { LookupError } from "./errors.ts";
import { normalizeIp } from "./ip.ts";
import { STATUS_LISTS } from "../status/mod.ts";

/** Shortest container ID prefix accepted (crictl's habit, Docker's short ID). */
export const MIN_CONTAINER_ID_PREFIX = 12;

/** The keys one pod version is found by. */
interface PodKeys {
  readonly name: string;
  readonly containerIds: readonly string[];
  readonly ips: readonly string[];
}

/**
 * Strips a runtime scheme (`containerd://`, `cri-o://`, `docker://`) and
 * lower-cases the hex ID.
 *
 * @param id A container ID as a pod status or a user writes it.
 * @returns The bare ID.
 */
export function bareContainerId(id: string): string {
  const scheme = id.indexOf("://");
  return (scheme >= 0 ? id.slice(scheme + 3) : id).trim().toLowerCase();
}

/** Text forms already normalized: a pod keeps its IPs and IDs across many versions. */
const NORMAL_IPS = new Map<string, string | undefined>();
const NORMAL_IDS = new Map<string, string>();
const NORMAL_LIMIT = 65_536;

/** Longest text memoized: IPs and container IDs are short; a client may send anything. */
const MEMO_MAX_LENGTH = 128;

function memo(text: string, kind: "ip" | "id"): string | undefined {
  if (text.length > MEMO_MAX_LENGTH) {
    return kind === "ip" ? normalizeIp(text) : bareContainerId(text);
  }
  if (kind === "ip") {
    if (NORMAL_IPS.has(text)) return NORMAL_IPS.get(text);
    const value = normalizeIp(text);
    if (NORMAL_IPS.size >= NORMAL_LIMIT) NORMAL_IPS.clear();
    NORMAL_IPS.set(text, value);
    return value;
  }
  const known = NORMAL_IDS.get(text);
  if (known !== undefined) return known;
  const value = bareContainerId(text);
  if (NORMAL_IDS.size >= NORMAL_LIMIT) NORMAL_IDS.clear();
  NORMAL_IDS.set(text, value);
  return value;
}

const NO_IPS: readonly string[] = Object.freeze([]);

/** Container IDs and IPs of a status object; a version that kept its status reuses them. */
const STATUS_KEYS = new WeakMap<object, { ids: string[]; ips: string[] }>();

function keysOf(pod: Readonly<PodObject>): PodKeys {
  const name = `${pod.metadata.namespace}/${pod.metadata.name}`;
  const hostNetwork = objectOf(pod.spec).hostNetwork === true;
  const raw = pod.status;
  if (isJsonObject(raw)) {
    const known = STATUS_KEYS.get(raw);
    if (known !== undefined) {
      return { name, containerIds: known.ids, ips: hostNetwork ? NO_IPS : known.ips };
    }
  }
  const keys = statusKeys(objectOf(raw));
  if (isJsonObject(raw)) STATUS_KEYS.set(raw, keys);
  return { name, containerIds: keys.ids, ips: hostNetwork ? NO_IPS : keys.ips };
}

function statusKeys(status: JsonObject): { ids: string[]; ips: string[] } {
  const ids: string[] = [];
  for (const list of STATUS_LISTS) {
    const statuses = status[list];
    if (!Array.isArray(statuses)) continue;
    for (const cs of statuses) {
      const c = objectOf(cs);
      if (typeof c.containerID === "string" && c.containerID !== "") {
        ids.push(memo(c.containerID, "id")!);
      }
      // The previous instance's logs and cgroup may still be around.
      const last = objectOf(objectOf(c.lastState).terminated).containerID;
      if (typeof last === "string" && last !== "") ids.push(memo(last, "id")!);
    }
  }
  // A host-network pod has the node's IP (left out by the caller): finding
  // "the pod with the node's IP" would be a lie.
  const ips: string[] = [];
  const add = (ip: JsonValue | undefined) => {
    if (typeof ip !== "string") return;
    const n = memo(ip, "ip");
    if (n !== undefined && !ips.includes(n)) ips.push(n);
  };
  add(status.podIP);
  if (Array.isArray(status.podIPs)) { for (const entry of status.podIPs) add(objectOf(entry).ip); }
  return { ids, ips };
}

/** Whether a pod version has the keys `old` holds, when its status object's keys are known. */
function keptKeys(old: PodKeys, pod: Readonly<PodObject>): boolean {
  const raw = pod.status;
  const known = isJsonObject(raw) ? STATUS_KEYS.get(raw) : undefined;
  if (known === undefined || known.ids !== old.containerIds) return false;
  const hostNetwork = objectOf(pod.spec).hostNetwork === true;
  if ((hostNetwork ? old.ips.length !== 0 : known.ips !== old.ips)) return false;
  const name = old.name;
  const ns = pod.metadata.namespace;
  return name.length === ns.length + 1 + pod.metadata.name.length && name.startsWith(ns) &&
    name.endsWith(pod.metadata.name) && name[ns.length] === "/";
}

function sameKeys(a: PodKeys, b: PodKeys): boolean {
  return a.name === b.name && arraysEqual(a.containerIds, b.containerIds) &&
    arraysEqual(a.ips, b.ips);
}

function arraysEqual(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function addTo(map: Map<string, Set<PodUid>>, key: string, uid: PodUid): void {
  let set = map.get(key);
  if (set === undefined) map.set(key, set = new Set());
  set.add(uid);
}

function removeFrom(map: Map<string, Set<PodUid>>, key: string, uid: PodUid): void {
  const set = map.get(key);
  if (set === undefined) return;
  set.delete(uid);
  if (set.size === 0) map.delete(key);
}

/** Indexes of a set of pods (live pods, or tombstones). */
export class PodIndex {
  #keys = new Map<PodUid, PodKeys>();
  #byName = new Map<string, Set<PodUid>>();
  #byContainer = new Map<string, Set<PodUid>>();
  #byIp = new Map<string, Set<PodUid>>();
  /** Container IDs sorted, for prefix search; `undefined` after a change. */
  #sortedIds: string[] | undefined = [];

  /** Pods indexed. */
  get size(): number {
    return this.#keys.size;
  }

  /**
   * Indexes a pod version, replacing what the same UID had.
   *
   * @param pod The pod's current version.
   */
  put(pod: CachedPod): void {
    const old = this.#keys.get(pod.uid);
    // Most changes keep a pod's keys: checked without building new ones.
    if (old !== undefined && keptKeys(old, pod.pod)) return;
    const keys = keysOf(pod.pod);
    if (old !== undefined) {
      if (sameKeys(old, keys)) return;
      this.#unindex(pod.uid, old);
    }
    this.#keys.set(pod.uid, keys);
    addTo(this.#byName, keys.name, pod.uid);
    for (const id of keys.containerIds) addTo(this.#byContainer, id, pod.uid);
    for (const ip of keys.ips) addTo(this.#byIp, ip, pod.uid);
    if (keys.containerIds.length > 0) this.#sortedIds = undefined;
  }

  /**
   * Forgets a pod.
   *
   * @param uid The pod's UID.
   */
  delete(uid: PodUid): void {
    const old = this.#keys.get(uid);
    if (old === undefined) return;
    this.#unindex(uid, old);
    this.#keys.delete(uid);
  }

  /**
   * @param namespace The namespace.
   * @param name The pod name.
   * @returns UIDs of pods with that name (more than one while a pod is replaced).
   */
  byName(namespace: string, name: string): readonly PodUid[] {
    return [...(this.#byName.get(`${namespace}/${name}`) ?? [])];
  }

  /**
   * @param ip Any valid notation of an IPv4 or IPv6 address.
   * @returns UIDs of pods with that IP.
   * @throws {LookupError} When `ip` is not an IP address.
   */
  byIp(ip: string): readonly PodUid[] {
    const normal = memo(ip, "ip");
    if (normal === undefined) {
      throw new LookupError(`Cannot look up pod IP ${quote(ip)}: not an IP address`);
    }
    return [...(this.#byIp.get(normal) ?? [])];
  }

  /**
   * Finds pods by container ID: exact, or a prefix of at least
   * {@linkcode MIN_CONTAINER_ID_PREFIX} characters naming one container.
   *
   * @param id `containerd://ID`, a bare ID, or a prefix.
   * @returns UIDs of the pods with that container (empty when none).
   * @throws {LookupError} For a prefix that is too short or names several containers.
   */
  byContainerId(id: string): readonly PodUid[] {
    const bare = memo(id, "id")!;
    const exact = this.#byContainer.get(bare);
    if (exact !== undefined) return [...exact];
    if (bare.length < MIN_CONTAINER_ID_PREFIX) {
      throw new LookupError(
        `Cannot look up container ID ${
          quote(id)
        }: give the full ID or a prefix of at least ${MIN_CONTAINER_ID_PREFIX} characters`,
      );
    }
    const sorted = this.#sortedIds ??= [...this.#byContainer.keys()].sort();
    let lo = 0;
    let hi = sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (sorted[mid]! < bare) lo = mid + 1;
      else hi = mid;
    }
    const first = sorted[lo];
    if (first === undefined || !first.startsWith(bare)) return [];
    const second = sorted[lo + 1];
    if (second !== undefined && second.startsWith(bare)) {
      throw new LookupError(
        `Cannot look up container ID ${quote(id)}: the prefix is ambiguous (${
          first.slice(0, 16)
        }..., ${second.slice(0, 16)}...)`,
      );
    }
    return [...this.#byContainer.get(first)!];
  }

  #unindex(uid: PodUid, keys: PodKeys): void {
    removeFrom(this.#byName, keys.name, uid);
    for (const id of keys.containerIds) removeFrom(this.#byContainer, id, uid);
    for (const ip of keys.ips) removeFrom(this.#byIp, ip, uid);
    if (keys.containerIds.length > 0) this.#sortedIds = undefined;
  }
}

/** Quotes a client-supplied value for a message, bounded and escaped. */
export function quote(value: string): string {
  return JSON.stringify(value.length > 80 ? value.slice(0, 80) + "..." : value);
}
