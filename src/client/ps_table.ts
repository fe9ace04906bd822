/**
 * `pods-api ps`: the node's containers as `crictl ps` prints them
 * (CONTAINER, IMAGE, CREATED, STATE, NAME, ATTEMPT, POD UID, POD, NAMESPACE),
 * taken from the pods' container statuses. Where crictl has POD ID, the
 * sandbox's ID, this says POD UID: a `v1.Pod` carries no sandbox ID, and
 * the UID is what `pods-api get` takes.
 *
 * @module
 */

import { isJsonObject, objectOf, stringOf } from "../model/json.ts";
import type { PodObject } from "../model/pod.ts";
import { STATUS_LISTS } from "../status/mod.ts";

/** A container's state as crictl names it. */
export type ContainerState = "Running" | "Exited" | "Created" | "Unknown";

/** One container of one pod. */
export interface ContainerRow {
  /** The runtime's ID without the `containerd://` scheme; empty before it is created. */
  readonly id: string;
  readonly image: string;
  /** When it started (RFC 3339), or empty. */
  readonly created: string;
  readonly state: ContainerState;
  readonly name: string;
  readonly attempt: number;
  readonly podUid: string;
  readonly podName: string;
  readonly namespace: string;
}

/**
 * The containers of some pods: init, regular and ephemeral, in pod order.
 *
 * @param pods The pods.
 * @returns One row per container status.
 */
export function containerRows(pods: readonly PodObject[]): ContainerRow[] {
  const rows: ContainerRow[] = [];
  for (const pod of pods) {
    const status = objectOf(pod.status);
    for (const key of STATUS_LISTS) {
      const list = status[key];
      if (!Array.isArray(list)) continue;
      for (const cs of list.filter(isJsonObject)) {
        const state = objectOf(cs.state);
        const kind: ContainerState = isJsonObject(state.running)
          ? "Running"
          : isJsonObject(state.terminated)
          ? "Exited"
          : isJsonObject(state.waiting)
          ? "Created"
          : "Unknown";
        const id = stringOf(cs.containerID).replace(/^[a-z0-9+.-]*:\/\//, "");
        rows.push({
          id,
          image: stringOf(cs.image),
          created: stringOf(objectOf(state.running).startedAt) ||
            stringOf(objectOf(state.terminated).startedAt),
          state: kind,
          name: stringOf(cs.name),
          attempt: typeof cs.restartCount === "number" ? cs.restartCount : 0,
          podUid: pod.metadata.uid,
          podName: pod.metadata.name,
          namespace: pod.metadata.namespace,
        });
      }
    }
  }
  return rows;
}

/**
 * Docker's and crictl's "how long ago" (`About a minute`, `3 hours`).
 *
 * @param ms Elapsed milliseconds.
 * @returns The words.
 */
export function humanDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 1) return "Less than a second";
  if (s === 1) return "1 second";
  if (s < 60) return `${s} seconds`;
  const m = Math.round(s / 60);
  if (m === 1) return "About a minute";
  if (m < 60) return `${m} minutes`;
  const h = Math.round(s / 3600);
  if (h === 1) return "About an hour";
  if (h < 48) return `${h} hours`;
  if (h < 24 * 7 * 2) return `${Math.floor(h / 24)} days`;
  if (h < 24 * 30 * 2) return `${Math.floor(h / 24 / 7)} weeks`;
  if (h < 24 * 365 * 2) return `${Math.floor(h / 24 / 30)} months`;
  return `${Math.floor(h / 24 / 365)} years`;
}

/** The header of `ps`. */
export const PS_HEADER = [
  "CONTAINER",
  "IMAGE",
  "CREATED",
  "STATE",
  "NAME",
  "ATTEMPT",
  "POD UID",
  "POD",
  "NAMESPACE",
];

/**
 * One table row, truncated as crictl does (13-character IDs).
 *
 * @param row The container.
 * @param now Current time, ms since the epoch.
 * @returns The cells, in {@linkcode PS_HEADER} order.
 */
export function psCells(row: ContainerRow, now: number): string[] {
  const started = Date.parse(row.created);
  return [
    row.id.slice(0, 13) || "-",
    row.image || "-",
    Number.isNaN(started) ? "-" : `${humanDuration(now - started)} ago`,
    row.state,
    row.name,
    String(row.attempt),
    row.podUid.slice(0, 13),
    row.podName,
    row.namespace,
  ];
}
