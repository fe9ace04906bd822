/**
 * Where pods come from. A source returns its full current view on every
 * call; the cache diffs views, so a source need not track changes itself
 * (it should hand back the same snapshot object for an unchanged pod, which
 * lets the merge and the cache skip it by identity).
 *
 * @module
 */

import type { PodSnapshot } from "../model/pod.ts";
import type { PodSourceKind } from "../model/pod_source_kind.ts";
import type { ContainerProcessSource } from "./process/mod.ts";

export type { PodSourceKind };

/** A provider of the node's pods (kubelet: a pod source plus the runtime). */
export interface PodSource {
  /** What kind of source this is, for logs and metric labels. */
  readonly kind: PodSourceKind;
  /**
   * Reads the source's complete current view.
   *
   * @param signal Aborts the read (timeout or shutdown).
   * @returns Every pod the source knows, each once.
   * @throws {SourceUnavailableError} When the source cannot be read now.
   */
  list(signal: AbortSignal): Promise<readonly PodSnapshot[]>;
  /**
   * The period to relist this source at, in ms, when it is not the daemon's
   * `--relist-period` (the kubelet's `/pods` is polled less often, manifests
   * are rescanned at `--file-check-frequency`).
   */
  readonly periodMs?: number;
  /**
   * Calls `onChange` whenever the source learns that its view changed (the
   * runtime's container events, a manifest directory's file events), so the
   * daemon relists it early; the periodic relist stays the authority.
   *
   * A source with {@linkcode PodSource.view} may take a change in itself
   * (the runtime's event carries the pod's statuses) and call `onApplied`
   * instead: its view then holds the change, and the daemon hands the view on
   * without a read.
   *
   * @param signal Stops watching.
   * @param onChange Called per change (a relist is idempotent: bursts are cheap).
   * @param onApplied Called per change the source took into its view.
   * @returns Resolves once the signal aborts or the source has nothing to watch.
   */
  watchChanges?(
    signal: AbortSignal,
    onChange: () => void,
    onApplied?: () => void,
  ): Promise<void>;
  /**
   * The source's view without reading it again: as its last `list()` left
   * it, with the changes it took in since (see `watchChanges`).
   *
   * @returns Every pod the source knows, each once.
   */
  view?(): readonly PodSnapshot[];
  /** Releases what the source holds open (an HTTP client, a socket). */
  close?(): void;
}

/**
 * A source that can say it is serving less than its best without failing
 * (the kubelet's Pods API down: its pods held, status from the runtime).
 */
export interface DegradableSource {
  /** @returns Why, as a sentence for `/readyz`; `undefined` when all is well. */
  degradedReason(): string | undefined;
}

/**
 * Why a source is degraded, for sources that can say.
 *
 * @param source Any source.
 * @returns Its reason, or `undefined` when it has none or cannot say.
 */
export function degradedReasonOf(source: PodSource): string | undefined {
  if (!("degradedReason" in source) || typeof source.degradedReason !== "function") {
    return undefined;
  }
  return (source as PodSource & DegradableSource).degradedReason();
}

/** Raised by a source that cannot produce a full view right now. */
export class SourceUnavailableError extends Error {
  /** A short machine-readable reason, used as a metric label. */
  readonly reason: string;

  /**
   * @param message What failed, for the log.
   * @param options `reason` for metrics and the underlying `cause`.
   */
  constructor(message: string, options: { reason: string; cause?: unknown }) {
    super(message, { cause: options.cause });
    this.name = "SourceUnavailableError";
    this.reason = options.reason;
  }
}

/**
 * The source that knows its containers' processes (the CRI source), if any.
 *
 * @param sources The daemon's sources.
 * @returns The first that does, or `undefined`.
 */
export function containerProcessSourceOf(
  sources: readonly PodSource[],
): ContainerProcessSource | undefined {
  for (const source of sources) {
    if ("containerProcesses" in source && typeof source.containerProcesses === "function") {
      return source as PodSource & ContainerProcessSource;
    }
  }
  return undefined;
}
