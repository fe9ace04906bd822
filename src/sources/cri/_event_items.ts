/**
 * The list items a runtime event's statuses stand for. A `ContainerEventResponse`
 * carries statuses (`PodSandboxStatus`, `ContainerStatus`), while the CRI
 * source keeps, per sandbox and container, the item a list gives and the
 * status an inspection gives: these build the first from the second, field for
 * field, so that a record made from an event and one made by a list agree.
 *
 * @module
 */

import type { Container, ContainerStatus, PodSandbox, PodSandboxStatus } from "./_types.ts";

/**
 * @param status A sandbox's status.
 * @returns The `ListPodSandbox` item of that sandbox.
 */
export function sandboxItemOf(status: PodSandboxStatus): PodSandbox {
  return {
    id: status.id,
    metadata: status.metadata,
    state: status.state,
    createdAt: status.createdAt,
    labels: status.labels,
    annotations: status.annotations,
    runtimeHandler: status.runtimeHandler,
  };
}

/**
 * @param status A container's status.
 * @param podSandboxId The sandbox the event names it in (a status does not say).
 * @returns The `ListContainers` item of that container.
 */
export function containerItemOf(status: ContainerStatus, podSandboxId: string): Container {
  return {
    id: status.id,
    podSandboxId,
    metadata: status.metadata,
    image: status.image,
    imageRef: status.imageRef,
    state: status.state,
    createdAt: status.createdAt,
    labels: status.labels,
    annotations: status.annotations,
    imageId: status.imageId,
  };
}

/**
 * Whether an event's sandbox status says nothing new of the one held: same
 * state, creation and IPs (what a sandbox's status can change).
 *
 * @param held The status held.
 * @param next The event's.
 * @returns `true` when the pod built from either is the same.
 */
export function sameSandboxStatus(held: PodSandboxStatus, next: PodSandboxStatus): boolean {
  if (held.state !== next.state || held.createdAt !== next.createdAt) return false;
  const a = held.network;
  const b = next.network;
  if ((a?.ip ?? "") !== (b?.ip ?? "")) return false;
  const more = a?.additionalIps ?? [];
  const moreNext = b?.additionalIps ?? [];
  return more.length === moreNext.length && more.every((x, i) => x.ip === moreNext[i]!.ip);
}

/**
 * Whether an event's container status says nothing new of the one held:
 * same state, times, exit and image reference (what a container's status can
 * change; its name, image and labels are fixed at creation).
 *
 * @param held The status held.
 * @param next The event's.
 * @returns `true` when the pod built from either is the same.
 */
export function sameContainerStatus(held: ContainerStatus, next: ContainerStatus): boolean {
  return held.state === next.state && held.createdAt === next.createdAt &&
    held.startedAt === next.startedAt && held.finishedAt === next.finishedAt &&
    held.exitCode === next.exitCode && held.reason === next.reason &&
    held.message === next.message && held.imageRef === next.imageRef;
}
