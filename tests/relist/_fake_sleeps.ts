/**
 * The relist tests' injected `sleep`: waits end only when a test fires them
 * (or their signal aborts), so no test waits on real time.
 *
 * @module
 */

/** Sleeps that only end when a test fires them (or their signal aborts). */
export class FakeSleeps {
  /** Waits not ended yet, oldest first. */
  pending: { ms: number; resolve: () => void }[] = [];
  /** Resolve sleeps of these lengths at once (the run loop's waits). */
  instant = new Set<number>();
  /** The length of every sleep asked for, in order. */
  log: number[] = [];

  /** The `sleep` to inject. */
  sleep = (ms: number, signal: AbortSignal): Promise<void> => {
    this.log.push(ms);
    if (this.instant.has(ms) || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const entry = { ms, resolve };
      this.pending.push(entry);
      signal.addEventListener("abort", () => {
        this.pending = this.pending.filter((e) => e !== entry);
        resolve();
      }, { once: true });
    });
  };

  /** Ends every pending sleep of `ms`. */
  fire(ms: number): void {
    const due = this.pending.filter((e) => e.ms === ms);
    this.pending = this.pending.filter((e) => e.ms !== ms);
    for (const entry of due) entry.resolve();
  }

  /** The lengths of the pending sleeps. */
  get waiting(): number[] {
    return this.pending.map((e) => e.ms);
  }
}
