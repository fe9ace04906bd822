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
