/**
 * A scriptable in-memory pod source for tests: set the pods it reports,
 * make its next reads fail or hang, delay its first successful read.
 *
 * @module
 */

import { type PodObject, type PodSnapshot, snapshotOf } from "../../model/pod.ts";
import { type PolledSource, SourceUnavailableError } from "../mod.ts";

/** Options of {@linkcode FakePodSource}. */
export interface FakePodSourceOptions {
  /** The pods reported until {@linkcode FakePodSource.set} is called. @default {[]} */
  pods?: readonly PodObject[];
}

type Scripted = { kind: "fail"; error: Error } | { kind: "hang" };

/**
 * A {@linkcode PolledSource} whose view a test sets directly. Snapshots are
 * reused for pod objects already seen, so an unchanged pod keeps its
 * snapshot identity across `set()` calls.
 *
 * @example Usage
 * ```ts
 * import { FakePodSource } from "./fake_source.ts";
 * const source = new FakePodSource();
 * source.set([{ metadata: { uid: "u1", name: "a", namespace: "default" } }]);
 * source.failNext();
 * await source.list(AbortSignal.timeout(1000)).catch(() => {});
 * console.log((await source.list(AbortSignal.timeout(1000))).length);
 * ```
 */
export class FakePodSource implements PolledSource {
  /** Always `"fake"`. */
  readonly kind = "fake" as const;

  #snapshots: readonly PodSnapshot[] = Object.freeze([]);
  #known = new WeakMap<PodObject, PodSnapshot>();
  #script: Scripted[] = [];
  #calls = 0;

  /**
   * @param options Initial pods. (A delayed first sync is `withFirstSyncDelay()`'s job.)
   */
  constructor(options: FakePodSourceOptions = {}) {
    if (options.pods) this.set(options.pods);
  }

  /** Number of `list()` calls so far (including failed ones). */
  get listCalls(): number {
    return this.#calls;
  }

  /**
   * Replaces the reported pods.
   *
   * @param pods The new view; each pod needs a `metadata.uid`.
   * @throws {TypeError} When a pod has no UID.
   */
  set(pods: readonly PodObject[]): void {
    const next: PodSnapshot[] = [];
    for (const pod of pods) {
      let snapshot = this.#known.get(pod);
      if (snapshot === undefined) {
        snapshot = snapshotOf(pod);
        this.#known.set(pod, snapshot);
      }
      next.push(snapshot);
    }
    this.#snapshots = Object.freeze(next);
  }

  /**
   * Replaces the reported view with raw snapshots, unchecked (to feed
   * malformed or duplicate entries to the code under test).
   *
   * @param snapshots The new view.
   */
  setSnapshots(snapshots: readonly PodSnapshot[]): void {
    this.#snapshots = Object.freeze([...snapshots]);
  }

  /**
   * Makes the next `list()` throw. Calls queue up: two calls fail the next
   * two reads.
   *
   * @param error What to throw. @default {a SourceUnavailableError with reason "injected"}
   */
  failNext(error?: Error): void {
    this.#script.push({
      kind: "fail",
      error: error ??
        new SourceUnavailableError("Fake source failure injected", { reason: "injected" }),
    });
  }

  /** Makes the next `list()` wait until its signal aborts, then reject with the reason. */
  hangNext(): void {
    this.#script.push({ kind: "hang" });
  }

  /**
   * Reports the current view, or plays the next scripted failure.
   *
   * @param signal Aborts the read.
   * @returns The snapshots last set.
   * @throws {SourceUnavailableError} When a failure was scripted.
   */
  list(signal: AbortSignal): Promise<readonly PodSnapshot[]> {
    this.#calls++;
    if (signal.aborted) return Promise.reject(signal.reason);
    const step = this.#script.shift();
    if (step?.kind === "fail") return Promise.reject(step.error);
    if (step?.kind === "hang") return hang(signal);
    return Promise.resolve(this.#snapshots);
  }
}

function hang(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    signal.addEventListener("abort", () => reject(signal.reason), { once: true });
  });
}
