/**
 * What the CRI source holds of the runtime, record by record: each sandbox
 * and container with the runtime time it was observed at. The list diffing
 * (`cri_state.ts`) replaces the records; the event intake
 * (`_event_intake.ts`) moves them on.
 *
 * @module
 */

import type { Container, ContainerStatus, PodSandbox, PodSandboxStatus } from "./_types.ts";

/**
 * When a relist read the runtime, in ns since the epoch (the clock the
 * runtime stamps its events with): it read everything after `fromNs` and
 * before `toNs`.
 */
export interface ListWindow {
  readonly fromNs: number;
  readonly toNs: number;
}

/**
 * What became of an event: `applied` (taken in; the view may be the same),
 * `covered` (older than what the last relist read), `relist` (left to one).
 */
export type EventOutcome = "applied" | "covered" | "relist";

/** A runtime record and when the runtime was observed with it. */
export interface Observed {
  /** The runtime was in this state at some time from `seenFromNs` to `seenToNs`. */
  readonly seenFromNs: number;
  readonly seenToNs: number;
  /** The status was read by a relist's inspection (not given by an event). */
  readonly listed: boolean;
  /** Made by an event: its item is built from the event's status, not listed. */
  readonly byEvent: boolean;
  /** Inspect at the next relist: made or changed by an event, or its inspection failed. */
  readonly inspect: boolean;
}

export interface SandboxRecord extends Observed {
  readonly item: PodSandbox;
  /** The pod UID it belongs to, or `undefined` when it names none validly. */
  readonly uid: string | undefined;
  readonly status: PodSandboxStatus | undefined;
}

export interface ContainerRecord extends Observed {
  readonly item: Container;
  readonly status: ContainerStatus | undefined;
}

/** The records held, as the last relist left them and the events taken in since. */
export interface HeldRecords {
  /** The window of the last relist applied, if any. */
  readonly window: ListWindow | undefined;
  readonly sandboxes: Map<string, SandboxRecord>;
  readonly containers: Map<string, ContainerRecord>;
  /** Exited containers to inspect once more: a runtime may record an exit's reason late. */
  readonly exitRecheck: Set<string>;
  /**
   * Sandboxes and containers an event found gone since the last relist,
   * with its stamp: an older event arriving late must not bring one back.
   */
  readonly goneAt: Map<string, number>;
}
