/**
 * Runs a watched source (one that pushes its views: the kubelet's Pods API,
 * the API server) into its {@linkcode SourceFeed}: the counterpart of the
 * {@linkcode Relister} for sources that need no polling. Nothing here reads
 * the source; it only starts its watch and tells when an outcome arrived.
 *
 * @module
 */

import type { PodSnapshot } from "../model/pod.ts";
import type { ViewSink, WatchedSource } from "../sources/mod.ts";
import type { SourceFeed } from "./source_feed.ts";

/**
 * A watched source and its feed.
 *
 * @example Usage
 * ```ts ignore
 * const watcher = new Watcher(source, feed);
 * await watcher.relistOnce(signal); // starts the watch, waits for its first outcome
 * ```
 */
export class Watcher {
  /** Where the source's views go, and its record. */
  readonly feed: SourceFeed;
  readonly #source: WatchedSource;
  #running: Promise<void> | undefined;
  /** Outcomes (views or failures) so far. */
  #outcomes = 0;
  #waiters = new Set<() => void>();
  readonly #sink: ViewSink;

  /**
   * @param source The watched source.
   * @param feed Its sink and record.
   */
  constructor(source: WatchedSource, feed: SourceFeed) {
    this.#source = source;
    this.feed = feed;
    this.#sink = {
      view: (snapshots: readonly PodSnapshot[], heldBecause?: string) => {
        feed.view(snapshots, heldBecause);
        this.#arrived();
      },
      failed: (error: unknown) => {
        feed.failed(error);
        this.#arrived();
      },
    };
  }

  /** The source's name in metrics and logs. */
  get name(): string {
    return this.feed.name;
  }

  /**
   * Starts the watch (once) and resolves when it has stopped.
   *
   * @param signal Stops the watch.
   * @returns Resolves once stopped.
   */
  run(signal: AbortSignal): Promise<void> {
    return this.#running ??= this.#source.run(this.#sink, signal).finally(() => this.#arrived());
  }

  /**
   * Starts the watch if it is not running, and waits for its first outcome
   * when it has had none: what a relist is to a polled source.
   *
   * @param signal Stops the watch (shutdown) and the wait.
   * @returns Whether the source's last outcome was a view.
   */
  async relistOnce(signal: AbortSignal): Promise<boolean> {
    void this.run(signal);
    if (this.#outcomes === 0 && !signal.aborted) {
      await new Promise<void>((resolve) => {
        const done = () => {
          this.#waiters.delete(done);
          signal.removeEventListener("abort", done);
          resolve();
        };
        this.#waiters.add(done);
        signal.addEventListener("abort", done, { once: true });
      });
    }
    return this.feed.synced && this.feed.consecutiveFailures === 0;
  }

  /** Nothing to do: a watch hands every change on as it comes. */
  requestRelist(): void {}

  #arrived(): void {
    this.#outcomes++;
    for (const wake of [...this.#waiters]) wake();
  }
}
