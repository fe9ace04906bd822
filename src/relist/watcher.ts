/**
 * Runs a watched source (one that pushes its views: the kubelet's Pods API,
 * the API server) into its {@linkcode SourceFeed}: the counterpart of the
 * {@linkcode Relister} for sources that need no polling. It starts the
 * source's watch, tells when the source has said something, and while the
 * source vouches for its view, renews the source's last-success time every
 * period: a quiet watch is current, not stale, to alerts as to `/readyz`.
 *
 * @module
 */

import type { Sleep } from "../sleep.ts";
import type { WatchedSource } from "../sources/mod.ts";
import { untilAborted } from "./_abort.ts";
import type { SourceFeed } from "./source_feed.ts";

/** A watched source and its feed. */
export class Watcher {
  /** Where the source's views go, and its record. */
  readonly feed: SourceFeed;
  readonly #source: WatchedSource;
  readonly #renew: { readonly periodMs: number; readonly sleep: Sleep } | undefined;
  #running: Promise<void> | undefined;
  /** Resolves at the source's first view or failure. */
  readonly #said = Promise.withResolvers<void>();

  /**
   * @param source The watched source.
   * @param feed Its sink and record.
   * @param renew How often {@linkcode run} renews the last-success time, and the sleep it waits on.
   */
  constructor(
    source: WatchedSource,
    feed: SourceFeed,
    renew?: { readonly periodMs: number; readonly sleep: Sleep },
  ) {
    this.#source = source;
    this.feed = feed;
    this.#renew = renew;
  }

  /**
   * Starts the watch (once) and, until it has stopped, renews the source's
   * last-success time every period while the source vouches for its view.
   *
   * @param signal Stops the watch.
   * @returns Resolves once stopped.
   */
  async run(signal: AbortSignal): Promise<void> {
    const running = this.#start(signal);
    const renew = this.#renew;
    while (renew !== undefined && !signal.aborted) {
      await renew.sleep(renew.periodMs, signal);
      if (!signal.aborted) this.feed.renew();
    }
    await running;
  }

  #start(signal: AbortSignal): Promise<void> {
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
    void this.#start(signal);
    await untilAborted(this.#said.promise, signal).catch(() => {});
    return this.feed.synced && this.feed.consecutiveFailures === 0;
  }

  /** Nothing to do: a watch hands every change on as it comes. */
  requestRelist(): void {}
}
