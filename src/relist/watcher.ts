/**
 * Runs a watched source (one that pushes its views: the kubelet's Pods API,
 * the API server) into its {@linkcode SourceFeed}: the counterpart of the
 * {@linkcode Relister} for sources that need no polling. It only starts the
 * source's watch and tells when the source has said something.
 *
 * @module
 */

import type { WatchedSource } from "../sources/mod.ts";
import { untilAborted } from "./_abort.ts";
import type { SourceFeed } from "./source_feed.ts";

/** A watched source and its feed. */
export class Watcher {
  /** Where the source's views go, and its record. */
  readonly feed: SourceFeed;
  readonly #source: WatchedSource;
  #running: Promise<void> | undefined;
  /** Resolves at the source's first view or failure. */
  readonly #said = Promise.withResolvers<void>();

  /**
   * @param source The watched source.
   * @param feed Its sink and record.
   */
  constructor(source: WatchedSource, feed: SourceFeed) {
    this.#source = source;
    this.feed = feed;
  }

  /**
   * Starts the watch (once) and resolves when it has stopped.
   *
   * @param signal Stops the watch.
   * @returns Resolves once stopped.
   */
  run(signal: AbortSignal): Promise<void> {
    const said = () => this.#said.resolve();
    this.#running ??= this.#source.run({
      view: (snapshots, heldBecause) => (this.feed.view(snapshots, heldBecause), said()),
      failed: (error) => (this.feed.failed(error), said()),
    }, signal).finally(said);
    return this.#running;
  }

  /**
   * Starts the watch if it is not running, and waits until the source has
   * said something: what a relist is to a polled source.
   *
   * @param signal Stops the watch (shutdown) and the wait.
   * @returns Whether the source's last word was a view.
   */
  async relistOnce(signal: AbortSignal): Promise<boolean> {
    void this.run(signal);
    await untilAborted(this.#said.promise, signal).catch(() => {});
    return this.feed.synced && this.feed.consecutiveFailures === 0;
  }

  /** Nothing to do: a watch hands every change on as it comes. */
  requestRelist(): void {}
}
