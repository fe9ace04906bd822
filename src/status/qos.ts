/**
 * A pod's QoS class (`v1.PodQOSClass`), as the kubelet computes it for
 * `status.qosClass` from the containers' requests and limits.
 *
 * @module
 */

import { isJsonObject, type JsonObject } from "../model/json.ts";

/** `v1.PodQOSClass`. */
export type QosClass = "BestEffort" | "Burstable" | "Guaranteed";

const QOS_RESOURCES = ["cpu", "memory"] as const;

function resourceMap(container: unknown, key: "requests" | "limits"): JsonObject {
  if (!isJsonObject(container) || !isJsonObject(container.resources)) return {};
  const map = container.resources[key];
  return isJsonObject(map) ? map : {};
}

/**
 * The QoS class: no CPU or memory request or limit on any container is
 * BestEffort; CPU and memory limits on every container, with any request
 * equal to its limit, is Guaranteed; anything else is Burstable. Init and
 * regular containers count.
 *
 * @example Usage
 * ```ts
 * import { qosClassOf } from "./qos.ts";
 * qosClassOf({ containers: [{ name: "app" }] }); // "BestEffort"
 * ```
 *
 * @param spec A pod spec in its JSON shape.
 * @returns The QoS class.
 */
export function qosClassOf(spec: Readonly<JsonObject>): QosClass {
  const containers = [
    ...(Array.isArray(spec.initContainers) ? spec.initContainers : []),
    ...(Array.isArray(spec.containers) ? spec.containers : []),
  ];
  let any = false;
  let guaranteed = true;
  for (const c of containers) {
    const requests = resourceMap(c, "requests");
    const limits = resourceMap(c, "limits");
    for (const r of QOS_RESOURCES) {
      if (requests[r] !== undefined || limits[r] !== undefined) any = true;
      if (limits[r] === undefined) guaranteed = false;
      else if (requests[r] !== undefined && requests[r] !== limits[r]) guaranteed = false;
    }
  }
  if (!any) return "BestEffort";
  return guaranteed ? "Guaranteed" : "Burstable";
}
