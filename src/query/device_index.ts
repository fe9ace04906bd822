/**
 * Pods by the devices they hold (podresources): a device plugin ID
 * (`GPU-8f2c...`), a DRA device as `driver/pool/device` or by its device
 * name, or a CDI device name. Kept in step with the cache by the query
 * engine; only a change of a pod's resources touches the map.
 *
 * @module
 */

import type { CachedPod } from "../cache/types.ts";
import type { PodUid } from "../model/pod.ts";
import { containerDeviceIds, type PodResources } from "../model/pod_resources.ts";

function idsOf(resources: PodResources | undefined): Set<string> {
  const ids = new Set<string>();
  if (resources === undefined) return ids;
  for (const c of resources.containers) for (const [, id] of containerDeviceIds(c)) ids.add(id);
  return ids;
}

/** Pod UIDs by device ID. */
export class DeviceIndex {
  #resources = new Map<PodUid, PodResources>();
  #byDevice = new Map<string, Set<PodUid>>();

  /**
   * Indexes a pod version's devices, replacing what the same UID had.
   *
   * @param pod The pod's current version.
   */
  put(pod: CachedPod): void {
    const old = this.#resources.get(pod.uid);
    if (old === pod.resources) return;
    this.delete(pod.uid);
    if (pod.resources === undefined) return;
    this.#resources.set(pod.uid, pod.resources);
    for (const id of idsOf(pod.resources)) {
      let set = this.#byDevice.get(id);
      if (set === undefined) this.#byDevice.set(id, set = new Set());
      set.add(pod.uid);
    }
  }

  /**
   * Forgets a pod.
   *
   * @param uid The pod's UID.
   */
  delete(uid: PodUid): void {
    const old = this.#resources.get(uid);
    if (old === undefined) return;
    this.#resources.delete(uid);
    for (const id of idsOf(old)) {
      const set = this.#byDevice.get(id);
      set?.delete(uid);
      if (set?.size === 0) this.#byDevice.delete(id);
    }
  }

  /**
   * @param id A device ID or name.
   * @returns UIDs of the pods holding it (more than one for a shared DRA claim).
   */
  byDevice(id: string): readonly PodUid[] {
    return [...(this.#byDevice.get(id) ?? [])];
  }
}
