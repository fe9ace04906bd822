/**
 * Joining the kubelet's podresources answer (keyed by namespace and name,
 * without UIDs) onto the cached pods (keyed by UID). A name can belong to two
 * pods at once on a node: one being torn down, or force-deleted and still
 * running, and its replacement created under the same name. The kubelet
 * lists only the pods it currently runs (not terminated, no termination
 * requested), so an entry belongs to that one. How the join tells which:
 *
 * 1. Candidates are the cached pods of that namespace and name that the
 *    kubelet would still run: no `deletionTimestamp`, phase neither Succeeded
 *    nor Failed. With none, the entry waits for the next answer (`no_pod`):
 *    its pod is not known here yet.
 * 2. The newest candidate wins (`creationTimestamp`, then the cache's
 *    version): a pod re-created under a name is newer than the one it replaces.
 * 3. Every container the entry names must be a container of the candidate's
 *    spec, when a source other than the runtime gave that spec (the
 *    runtime's lists only the containers it has made so far); otherwise the
 *    entry is a pod made from another template and waits (`held_back`).
 * 4. Devices are fixed for a pod's life (device plugins and DRA allocate
 *    them at admission). If the candidate was joined before with other
 *    devices, the entry is taken for a newer pod's that the cache has not
 *    seen yet and waits (`held_back`), at most {@linkcode MAX_HOLD_BACK}
 *    answers in a row; after that the kubelet's word is taken.
 *
 * A cached pod that no entry joins holds nothing. Remaining gap: a pod that
 * held no devices, replaced by one that does while the cache has not seen
 * the new UID yet, lends the old UID the new devices until the cache catches
 * up (one relist period).
 *
 * @module
 */

import type { CachedPod } from "../cache/types.ts";
import { isJsonObject } from "../model/json.ts";
import { podPhase, type PodUid } from "../model/pod.ts";
import {
  containerDevices,
  normalizePodResources,
  type PodResources,
} from "../model/pod_resources.ts";

/** Answers in a row an entry may be held back before the kubelet's word is taken. */
export const MAX_HOLD_BACK = 10;

/** How the entries of one answer joined. */
export interface JoinResult {
  /** Each joined pod's resources, by UID. */
  readonly byUid: ReadonlyMap<PodUid, PodResources>;
  /** Entries joined to a pod. */
  readonly matched: number;
  /** Entries whose pod is not known (yet). */
  readonly noPod: number;
  /** Entries whose name's known pod is not the one the kubelet runs. */
  readonly heldBack: number;
}

const TERMINAL = new Set(["Succeeded", "Failed"]);
const CONTAINER_LISTS = ["initContainers", "containers", "ephemeralContainers"] as const;

function runnable(pod: CachedPod): boolean {
  return pod.pod.metadata.deletionTimestamp === undefined &&
    !TERMINAL.has(podPhase(pod.pod) ?? "");
}

function newest(pods: readonly CachedPod[]): CachedPod | undefined {
  let best: CachedPod | undefined;
  for (const pod of pods) {
    if (best === undefined) {
      best = pod;
      continue;
    }
    const a = best.pod.metadata.creationTimestamp ?? "";
    const b = pod.pod.metadata.creationTimestamp ?? "";
    if (b > a || (b === a && pod.version > best.version)) best = pod;
  }
  return best;
}

/** The container names of a pod's spec, or `undefined` when it lists none. */
function specContainers(pod: CachedPod): Set<string> | undefined {
  const spec = pod.pod.spec;
  if (!isJsonObject(spec)) return undefined;
  const names = new Set<string>();
  for (const list of CONTAINER_LISTS) {
    const items = spec[list];
    if (!Array.isArray(items)) continue;
    for (const c of items) if (isJsonObject(c) && typeof c.name === "string") names.add(c.name);
  }
  return names.size === 0 ? undefined : names;
}

/** The devices of an allocation as one text: equal texts, same devices. */
function deviceFingerprint(resources: PodResources): string {
  const ids: string[] = [];
  for (const c of resources.containers) {
    for (const d of containerDevices(c)) ids.push(`${c.name}\u0000${d.resource}\u0000${d.id}`);
  }
  return ids.sort().join("\n");
}

/**
 * Joins podresources answers onto cached pods, remembering across answers
 * which devices each pod UID was joined with (rule 4).
 *
 * @example Usage
 * ```ts ignore
 * const joiner = new ResourceJoiner();
 * const { byUid } = joiner.join(await client.list(), cache.list());
 * cache.applyResources(byUid);
 * ```
 */
export class ResourceJoiner {
  /** Devices each UID was last joined with (only UIDs that held devices). */
  #devices = new Map<PodUid, string>();
  /** Answers in a row each UID's entry was held back. */
  #held = new Map<PodUid, number>();

  /**
   * Joins one answer.
   *
   * @param entries The kubelet's `List` answer.
   * @param pods The cached pods.
   * @param wholeSpec Whether a pod's spec names all its containers (it came from a source
   *   other than the runtime). @default {every pod's does}
   * @returns The resources by UID, and how the entries joined.
   */
  join(
    entries: readonly PodResources[],
    pods: readonly CachedPod[],
    wholeSpec: (uid: PodUid) => boolean = () => true,
  ): JoinResult {
    const byName = new Map<string, CachedPod[]>();
    const live = new Set<PodUid>();
    for (const pod of pods) {
      live.add(pod.uid);
      if (!runnable(pod)) continue;
      const key = `${pod.pod.metadata.namespace}/${pod.pod.metadata.name}`;
      const list = byName.get(key);
      if (list === undefined) byName.set(key, [pod]);
      else list.push(pod);
    }
    const byUid = new Map<PodUid, PodResources>();
    const held = new Map<PodUid, number>();
    let matched = 0;
    let noPod = 0;
    let heldBack = 0;
    for (const entry of entries) {
      const resources = normalizePodResources(entry);
      if (resources === undefined) continue;
      const pod = newest(byName.get(`${resources.namespace}/${resources.name}`) ?? []);
      if (pod === undefined) {
        noPod++;
        continue;
      }
      if (!this.#belongs(resources, pod, wholeSpec(pod.uid))) {
        const times = (this.#held.get(pod.uid) ?? 0) + 1;
        if (times <= MAX_HOLD_BACK) {
          held.set(pod.uid, times);
          heldBack++;
          continue;
        }
      }
      byUid.set(pod.uid, resources);
      matched++;
      const devices = deviceFingerprint(resources);
      if (devices !== "") this.#devices.set(pod.uid, devices);
    }
    this.#held = held;
    // UIDs gone from the cache will not come back.
    for (const uid of this.#devices.keys()) if (!live.has(uid)) this.#devices.delete(uid);
    return { byUid, matched, noPod, heldBack };
  }

  #belongs(resources: PodResources, pod: CachedPod, wholeSpec: boolean): boolean {
    const names = wholeSpec ? specContainers(pod) : undefined;
    if (names !== undefined && resources.containers.some((c) => !names.has(c.name))) return false;
    const before = this.#devices.get(pod.uid);
    return before === undefined || before === deviceFingerprint(resources);
  }
}
