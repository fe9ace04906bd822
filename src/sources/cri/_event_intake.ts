/**
 * The CRI source's event intake: takes one runtime event that carries its
 * pod's statuses (containerd 1.7+, CRI-O) into the held records, as the
 * kubelet's evented PLEG takes it into its pod cache, and only moves a
 * record forward in the runtime's own time. Whatever it cannot be sure of
 * (no statuses, as containerd's sandbox DELETED; something made while the
 * last relist read) is left to a relist.
 *
 * @module
 */

import { isValidCriId, sandboxPodUid } from "./convert.ts";
import {
  containerItemOf,
  sameContainerStatus,
  sameSandboxStatus,
  sandboxItemOf,
} from "./_event_items.ts";
import type { EventOutcome, HeldRecords, ListWindow, Observed, SandboxRecord } from "./_records.ts";
import {
  CONTAINER_EVENT_TYPE,
  CONTAINER_STATE,
  type ContainerEventResponse,
  type ContainerStatus,
  POD_SANDBOX_STATE,
} from "./_types.ts";

/** How far on a container's state is: an event never moves one back (UNKNOWN: not at all). */
function rank(state: number): number {
  switch (state) {
    case CONTAINER_STATE.created:
      return 0;
    case CONTAINER_STATE.running:
      return 1;
    case CONTAINER_STATE.exited:
      return 2;
    default:
      return -1;
  }
}

/** How far on a sandbox's state is: READY, then NOTREADY (for good). */
function sandboxRank(state: number): number {
  return state === POD_SANDBOX_STATE.notReady ? 1 : 0;
}

/**
 * Takes one runtime event in. Its statuses are the sandbox's and every one
 * of its containers' as of its stamp (`createdAt`). A record is replaced
 * only by a newer observation: stamped after the runtime was last observed
 * with it, and never to an earlier state (a container CREATED, RUNNING,
 * EXITED; a sandbox READY, NOTREADY). A held container of the sandbox that
 * the event leaves out, made before its stamp, is gone. Something the last
 * relist did not list is added only when made after that relist started;
 * when the event is stamped within its read, a relist is asked for too.
 * The sandbox's own DELETED removes the pod when it carries the sandbox's
 * status, as the kubelet takes it; without one (containerd) a relist does.
 *
 * @param event The event.
 * @returns What became of it.
 */
export function takeEvent(
  held: HeldRecords,
  event: ContainerEventResponse,
  rebuildPod: (uid: string) => void,
): EventOutcome {
  const window = held.window;
  const sandbox = event.podSandboxStatus;
  if (
    window === undefined || sandbox === null || !isValidCriId(sandbox.id) ||
    !event.containersStatuses.every((c) => isValidCriId(c.id))
  ) {
    return "relist";
  }
  const stamp = event.createdAt;
  if (stamp <= window.fromNs) return "covered";
  const sandboxId = sandbox.id;
  if (stamp <= (held.goneAt.get(sandboxId) ?? -Infinity)) return "covered";
  const known = held.sandboxes.get(sandboxId);
  if (
    event.containerEventType === CONTAINER_EVENT_TYPE.deleted && event.containerId === sandboxId
  ) {
    return removeSandbox(held, sandboxId, known, stamp, rebuildPod);
  }
  let unsure = false;
  if (known === undefined && stamp <= window.toNs) {
    // Within the read: made before it started and not listed, it was gone.
    if (sandbox.createdAt < window.fromNs) return "covered";
    unsure = true;
  }
  const item = sandboxItemOf(sandbox);
  const uid = sandboxPodUid(item);
  if (uid === undefined || (known !== undefined && known.uid !== uid)) return "relist";
  let changed = false;
  if (
    known === undefined ||
    forward(
      known,
      sandboxRank(known.item.state),
      sandboxRank(sandbox.state),
      stamp,
      () => known.status === undefined || !sameSandboxStatus(known.status, sandbox),
    )
  ) {
    held.sandboxes.set(sandboxId, { item, uid, status: sandbox, ...byEvent(stamp) });
    changed = true;
  }
  const named = new Set<string>();
  for (const status of event.containersStatuses) {
    named.add(status.id);
    const taken = takeContainer(held, status, sandboxId, stamp, window);
    if (taken === "unsure") unsure = true;
    if (taken !== "same") changed = true;
  }
  for (const [id, record] of held.containers) {
    if (
      record.item.podSandboxId !== sandboxId || named.has(id) ||
      record.item.createdAt > stamp || stamp <= record.seenFromNs
    ) {
      continue;
    }
    held.containers.delete(id);
    held.exitRecheck.delete(id);
    held.goneAt.set(id, stamp);
    changed = true;
  }
  if (changed) rebuildPod(uid);
  return unsure ? "relist" : "applied";
}

/**
 * The sandbox's own DELETED that still carries its status (as the kubelet
 * takes it, the pod leaves its cache): the sandbox and its containers are
 * gone for good (a relist that listed the sandbox read before its
 * removal), and no older event brings them back before the next relist.
 */
function removeSandbox(
  held: HeldRecords,
  id: string,
  known: SandboxRecord | undefined,
  stamp: number,
  rebuildPod: (uid: string) => void,
): EventOutcome {
  if (known === undefined) {
    held.goneAt.set(id, stamp);
    return "covered";
  }
  held.sandboxes.delete(id);
  held.goneAt.set(id, stamp);
  for (const [cid, record] of held.containers) {
    if (record.item.podSandboxId !== id) continue;
    held.containers.delete(cid);
    held.exitRecheck.delete(cid);
    held.goneAt.set(cid, stamp);
  }
  if (known.uid !== undefined) rebuildPod(known.uid);
  return "applied";
}

/**
 * Adds or moves on one container from an event's status.
 *
 * @returns `taken`, `same` (nothing newer), or `unsure` (taken, but made
 * while the last relist read: a relist must confirm it).
 */
function takeContainer(
  held: HeldRecords,
  status: ContainerStatus,
  sandboxId: string,
  stamp: number,
  window: ListWindow,
): "taken" | "same" | "unsure" {
  const record = held.containers.get(status.id);
  let outcome: "taken" | "unsure" = "taken";
  if (record === undefined) {
    if (stamp <= (held.goneAt.get(status.id) ?? -Infinity)) return "same";
    if (stamp <= window.toNs) {
      if (status.createdAt < window.fromNs) return "same";
      outcome = "unsure";
    }
  } else if (
    !forward(
      record,
      rank(record.item.state),
      rank(status.state),
      stamp,
      () => record.status === undefined || !sameContainerStatus(record.status, status),
    )
  ) {
    return "same";
  }
  held.containers.set(status.id, {
    item: containerItemOf(status, sandboxId),
    status,
    ...byEvent(stamp),
  });
  return outcome;
}

/** A record as an event leaves it: observed at the event's stamp, to be read by the next relist. */
function byEvent(stamp: number): Observed {
  return { seenFromNs: stamp, seenToNs: stamp, listed: false, byEvent: true, inspect: true };
}

/**
 * Whether an observation stamped `stamp` moves a record forward in the
 * runtime's time: surely newer than the record (after `seenToNs`), to a state
 * as far on and with news (`differs`); or maybe newer (after `seenFromNs`),
 * to a state further on.
 */
function forward(
  held: Observed,
  heldRank: number,
  nextRank: number,
  stamp: number,
  differs: () => boolean,
): boolean {
  if (stamp > held.seenToNs) return nextRank >= heldRank && differs();
  return stamp > held.seenFromNs && nextRank > heldRank;
}
