/**
 * Where pods come from. Every source hands its full current view to one
 * sink, the {@linkcode ViewSink} the daemon gives it; the cache diffs views,
 * so a source need not track changes itself (it should hand back the same
 * snapshot object for an unchanged pod, which lets the merge and the cache
 * skip it by identity). A watched source pushes a view at each change; a
 * polled one is read by its poller (`src/relist/relister.ts`), which pushes
 * what each read returns. What the pipeline makes of a source is in its row
 * of `SOURCE_TRAITS` (`src/model/pod_source_kind.ts`).
 *
 * @module
 */

import type { PodSnapshot } from "../model/pod.ts";
import type { PodSourceKind } from "../model/pod_source_kind.ts";
import type { ContainerProcessSource } from "./process/mod.ts";

export type { PodSourceKind };

/** Where a source hands its views: one per source, in order. */
export interface ViewSink {
  /**
   * Takes the source's full current view.
   *
   * @param snapshots Every pod the source knows now, each once.
   * @param heldBecause Set while the source does not answer and this is its
   *   view as it last said: why, for `/readyz`. Its specs still count, its
   *   statuses are no longer news.
   */
  view(snapshots: readonly PodSnapshot[], heldBecause?: string): void;
  /**
   * The source cannot give a view now: the last one stays.
   *
   * @param error Why (a {@linkcode SourceUnavailableError} names the metric reason).
   */
  failed(error: unknown): void;
}

/** A source that watches and pushes a view at every change. */
export interface WatchedSource {
  /** What kind of source this is, for logs, metric labels and its traits. */
  readonly kind: PodSourceKind;
  /**
   * Watches, handing every view and failure to `sink`, until `signal` aborts;
   * a sink that comes after the first outcome is handed the current one at once.
   *
   * @param sink Where the views go.
   * @param signal Stops the watch.
   * @returns Resolves once stopped.
   */
  run(sink: ViewSink, signal: AbortSignal): Promise<void>;
  /** Releases what the source holds open (a connection). */
  close?(): void;
}

/** What a polled source tells its poller between reads. */
export interface SourceChanges {
  /** The source learnt that its view changed: read it soon. */
  relist(): void;
  /** The source took a change into its view without a read: hand this view on. */
  view(snapshots: readonly PodSnapshot[]): void;
}

/** A source that is read, over and over, by a poller. */
export interface PolledSource {
  /** What kind of source this is, for logs, metric labels and its traits. */
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
   * The period to read this source at, in ms, when it is not the daemon's
   * `--relist-period` (the kubelet's `/pods` is polled less often, manifests
   * are rescanned at `--file-check-frequency`).
   */
  readonly periodMs?: number;
  /**
   * Tells `changes` whenever the source learns that its view changed (the
   * runtime's container events, a manifest directory's file events), so the
   * poller reads it early; the periodic read stays the authority. A source
   * that took a change into its view (the runtime's event carries the pod's
   * statuses) hands that view on instead.
   *
   * @param signal Stops watching.
   * @param changes Where to say so (a read is idempotent: bursts are cheap).
   * @returns Resolves once the signal aborts or the source has nothing to watch.
   */
  watchChanges?(signal: AbortSignal, changes: SourceChanges): Promise<void>;
  /**
   * The init processes of the source's running containers, for the process
   * lookups: set by the one source that knows them, the runtime's.
   */
  readonly processes?: ContainerProcessSource;
  /** Releases what the source holds open (an HTTP client, a socket). */
  close?(): void;
}

/** A provider of the node's pods: watched, or polled through a poller. */
export type PodSource = WatchedSource | PolledSource;

/**
 * @param source A source.
 * @returns Whether it pushes its own views (else it is polled).
 */
export function isWatched(source: PodSource): source is WatchedSource {
  return "run" in source;
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
    if (!isWatched(source) && source.processes !== undefined) return source.processes;
  }
  return undefined;
}
