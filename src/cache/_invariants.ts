/**
 * The per-pod watch invariants of DESIGN.md §6.4 that depend on content, enforced
 * on the way into the cache so every reader (List, Get and each watcher) sees
 * the same corrected history.
 *
 * @module
 */

import { isJsonObject } from "../model/json.ts";
import { POD_PHASE, type PodObject } from "../model/pod.ts";
import { isTerminalPhase } from "../status/mod.ts";

/** Which invariant a correction restored (the `kind` label of `invariantCorrections`). */
export type InvariantKind =
  /** `status.phase` was empty or missing; set to `Pending`. */
  | "phase_empty"
  /** A pod seen Running went back to Pending; kept at its previous phase. */
  | "phase_regression"
  /** A pod left Succeeded or Failed; kept at its terminal phase. */
  | "phase_terminal"
  /** `metadata.deletionTimestamp` disappeared; the previous one is kept. */
  | "deletion_timestamp";

/** What the cache remembers of a pod's past beyond its current object. */
export interface PodHistory {
  /** The pod as last stored (already corrected). */
  readonly pod: Readonly<PodObject>;
  /** The pod has been Running at some point (Running, then Unknown, must not become Pending). */
  readonly everRunning: boolean;
}

/** Options of {@linkcode enforceInvariants}. */
export interface EnforceOptions {
  /** Called once per correction made. */
  onCorrection(kind: InvariantKind): void;
}

function phaseOf(pod: Readonly<PodObject>): string | undefined {
  const status = pod.status;
  if (!isJsonObject(status)) return undefined;
  const phase = status.phase;
  return typeof phase === "string" && phase !== "" ? phase : undefined;
}

function withPhase(pod: Readonly<PodObject>, phase: string): Readonly<PodObject> {
  const status = isJsonObject(pod.status) ? pod.status : {};
  return { ...pod, status: { ...status, phase } };
}

/**
 * Returns `next`, or a corrected shallow copy of it, so that its history
 * keeps the watch invariants: phase never empty, never Running (ever) back
 * to Pending, never out of Succeeded or Failed; `deletionTimestamp` never
 * removed once set.
 *
 * @param next The pod as the source reports it (not modified).
 * @param history The pod's stored past, or `undefined` for a new pod.
 * @param options Receives each correction.
 * @returns The pod to store.
 */
export function enforceInvariants(
  next: Readonly<PodObject>,
  history: PodHistory | undefined,
  options: EnforceOptions,
): Readonly<PodObject> {
  let pod = next;
  let phase = phaseOf(pod);
  if (phase === undefined) {
    phase = POD_PHASE.pending;
    pod = withPhase(pod, phase);
    options.onCorrection("phase_empty");
  }
  if (history === undefined) return pod;
  const prevPhase = phaseOf(history.pod);
  // The stored pod is already corrected, so its phase is set; a pod once
  // Running is stored as Running, Unknown or terminal, never Pending.
  if (prevPhase !== undefined && isTerminalPhase(prevPhase) && phase !== prevPhase) {
    pod = withPhase(pod, prevPhase);
    options.onCorrection("phase_terminal");
  } else if (prevPhase !== undefined && phase === POD_PHASE.pending && history.everRunning) {
    pod = withPhase(pod, prevPhase);
    options.onCorrection("phase_regression");
  }
  const prevDeletion = history.pod.metadata.deletionTimestamp;
  if (typeof prevDeletion === "string" && typeof pod.metadata.deletionTimestamp !== "string") {
    pod = { ...pod, metadata: { ...pod.metadata, deletionTimestamp: prevDeletion } };
    options.onCorrection("deletion_timestamp");
  }
  return pod;
}

/**
 * Reports whether a pod's history includes Running, after storing `pod`.
 *
 * @param pod The pod being stored (already corrected).
 * @param history Its stored past, if any.
 * @returns `true` once the pod has been Running.
 */
export function everRunning(pod: Readonly<PodObject>, history: PodHistory | undefined): boolean {
  return (history?.everRunning ?? false) || phaseOf(pod) === POD_PHASE.running;
}
