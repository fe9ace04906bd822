/**
 * Pod builders and small fakes shared by the tests: `makePod()` for
 * `v1.Pod` objects in their JSON shape, a deterministic canonical-JSON
 * encoder (a stand-in for the protobuf encoder), a counting encoder and a
 * fake clock.
 *
 * @module
 */

import type { PodEncoder } from "../../src/cache/types.ts";
export { FakeClock } from "../../src/clock.ts";
import type { JsonObject, JsonValue } from "../../src/model/json.ts";
import type { PodObject, PodSnapshot } from "../../src/model/pod.ts";

/** Options of {@linkcode makePod}; every field has a default. */
export interface MakePodOptions {
  /** @default {`uid-${name}`} */
  uid?: string;
  /** @default {"web"} */
  name?: string;
  /** @default {"default"} */
  namespace?: string;
  /** `status.phase`; `null` leaves it out. @default {"Running"} */
  phase?: string | null;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** @default {"node-1"} */
  nodeName?: string;
  /** Container names, in order. @default {["app"]} */
  containers?: readonly string[];
  initContainers?: readonly string[];
  /** @default {"registry.k8s.io/pause:3.10"} */
  image?: string;
  /** Sets `status.podIP` and `status.podIPs`. */
  podIP?: string;
  /** @default {"2026-01-01T00:00:00Z"} */
  creationTimestamp?: string;
  deletionTimestamp?: string;
  /** Restart count of every container. @default {0} */
  restartCount?: number;
}

/**
 * Builds a pod in its Kubernetes JSON shape.
 *
 * @param options What to set; the rest gets defaults.
 * @returns A fresh object (never shared with another call).
 */
export function makePod(options: MakePodOptions = {}): PodObject {
  const name = options.name ?? "web";
  const image = options.image ?? "registry.k8s.io/pause:3.10";
  const containers = options.containers ?? ["app"];
  const phase = options.phase === undefined ? "Running" : options.phase;
  const metadata: PodObject["metadata"] = {
    uid: options.uid ?? `uid-${name}`,
    name,
    namespace: options.namespace ?? "default",
    creationTimestamp: options.creationTimestamp ?? "2026-01-01T00:00:00Z",
  };
  if (options.labels) metadata.labels = { ...options.labels };
  if (options.annotations) metadata.annotations = { ...options.annotations };
  if (options.deletionTimestamp) metadata.deletionTimestamp = options.deletionTimestamp;
  const spec: JsonObject = {
    nodeName: options.nodeName ?? "node-1",
    containers: containers.map((c) => ({ name: c, image })),
  };
  if (options.initContainers) {
    spec.initContainers = options.initContainers.map((c) => ({ name: c, image }));
  }
  const status: JsonObject = {
    containerStatuses: containers.map((c) => ({
      name: c,
      image,
      ready: phase === "Running",
      restartCount: options.restartCount ?? 0,
    })),
  };
  if (phase !== null) status.phase = phase;
  if (options.podIP) {
    status.podIP = options.podIP;
    status.podIPs = [{ ip: options.podIP }];
  }
  return { metadata, spec, status };
}

/**
 * Builds a snapshot (UID plus pod).
 *
 * @param options As {@linkcode makePod}.
 * @returns The snapshot.
 */
export function makeSnapshot(options: MakePodOptions = {}): PodSnapshot {
  const pod = makePod(options);
  return { uid: pod.metadata.uid, pod };
}

function canonical(value: JsonValue | undefined): string {
  if (value === undefined) return "null";
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  const keys = Object.keys(value).filter((k) => value[k] !== undefined).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(",")}}`;
}

const TEXT = new TextEncoder();

/**
 * A deterministic stand-in for the protobuf encoder: UTF-8 of a canonical
 * JSON with sorted keys (equal content, equal bytes).
 *
 * @param pod The pod.
 * @returns Its canonical JSON bytes.
 */
export function canonicalEncoder(pod: Readonly<PodObject>): Uint8Array {
  return TEXT.encode(canonical(pod));
}

/** An encoder that counts its calls. */
export interface CountingEncoder {
  readonly encode: PodEncoder;
  /** Calls so far. */
  readonly calls: number;
}

/**
 * Wraps {@linkcode canonicalEncoder} with a call counter.
 *
 * @returns The encoder and its counter.
 */
export function countingEncoder(): CountingEncoder {
  let calls = 0;
  return {
    encode: (pod) => {
      calls++;
      return canonicalEncoder(pod);
    },
    get calls() {
      return calls;
    },
  };
}
