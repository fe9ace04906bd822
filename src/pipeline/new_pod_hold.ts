/**
 * A new pod is announced once, with what the node knows of it: when the
 * runtime shows a pod before the sources that carry every pod's spec (those
 * whose traits say `newPodsWait`: the kubelet's `/pods`, the API server,
 * the simulated node) have said anything of it, the pod
 * waits until each of them has delivered a view since, or until
 * {@linkcode NewPodHoldOptions.maxHoldMs} has passed. Without the wait, a
 * watcher gets ADDED with runtime data only (no `restartPolicy`, owner,
 * resources...) and a MODIFIED right after in which some twenty paths
 * "change" that were merely unknown. A pod those sources do know is never
 * held, and neither is one that a source has not yet synced to vouch for.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import type { PodSnapshot, PodUid } from "../model/pod.ts";
import { isRuntime, type PodSourceKind, traitsOf } from "../model/pod_source_kind.ts";

/** Options of {@linkcode NewPodHold}. */
export interface NewPodHoldOptions {
  /** The configured sources' kinds. */
  readonly sources: readonly PodSourceKind[];
  readonly clock: Clock;
  /** The longest a new pod waits, ms; 0: never. */
  readonly maxHoldMs: number;
}

/** What {@linkcode NewPodHold.admit} asks of the rest of the pipeline. */
export interface HoldContext {
  /** Whether the pod is served already. */
  isServed(uid: PodUid): boolean;
  /** The kinds of the sources whose views have the pod now. */
  sourcesOf(uid: PodUid): readonly PodSourceKind[];
  /** Whether a source has delivered a view yet. */
  hasSynced(kind: PodSourceKind): boolean;
}

interface Held {
  readonly since: number;
  /** Spec sources that have not delivered a view since the pod was first held. */
  readonly waiting: Set<PodSourceKind>;
}

/**
 * Holds back new runtime-only pods from a merged view.
 *
 * @example Usage
 * ```ts
 * import { NewPodHold } from "./new_pod_hold.ts";
 * const hold = new NewPodHold({ sources: ["cri", "kubelet"], clock: { now: () => 0 }, maxHoldMs: 2000 });
 * const pod = { uid: "u", pod: { metadata: { uid: "u", name: "web", namespace: "d" } } };
 * const view = hold.admit("cri", [pod], {
 *   isServed: () => false,
 *   sourcesOf: () => ["cri"],
 *   hasSynced: () => true,
 * });
 * view.length; // 0: the kubelet's next view decides
 * hold.takeRequests(); // ["kubelet"]
 * ```
 */
export class NewPodHold {
  readonly #specSources: readonly PodSourceKind[];
  readonly #clock: Clock;
  readonly #maxHoldMs: number;
  readonly #held = new Map<PodUid, Held>();
  readonly #toAsk = new Set<PodSourceKind>();

  /** @param options The configured kinds, clock and longest wait. */
  constructor(options: NewPodHoldOptions) {
    this.#specSources = options.sources.filter((k) => traitsOf(k).newPodsWait);
    this.#clock = options.clock;
    this.#maxHoldMs = options.sources.some(isRuntime) ? options.maxHoldMs : 0;
  }

  /** How many pods wait now. */
  get size(): number {
    return this.#held.size;
  }

  /**
   * The spec sources that pods began to wait for since the last call: worth
   * reading now rather than at their next period.
   *
   * @returns Their kinds, each once.
   */
  takeRequests(): PodSourceKind[] {
    const kinds = [...this.#toAsk];
    this.#toAsk.clear();
    return kinds;
  }

  /**
   * The merged view to serve after `kind` delivered one: without the new
   * runtime-only pods that still wait.
   *
   * @param kind The source whose view was just merged.
   * @param merged The merged view.
   * @param context What is served, who has which pod, who has synced.
   * @returns `merged` itself when nothing waits, else a copy without the waiting pods.
   */
  admit(
    kind: PodSourceKind,
    merged: readonly PodSnapshot[],
    context: HoldContext,
  ): readonly PodSnapshot[] {
    if (this.#maxHoldMs <= 0 || this.#specSources.length === 0) return merged;
    for (const held of this.#held.values()) held.waiting.delete(kind);
    const now = this.#clock.now();
    const present = new Set<PodUid>();
    const out: PodSnapshot[] = [];
    for (const snapshot of merged) {
      const uid = snapshot.uid;
      present.add(uid);
      if (this.#waits(uid, now, context)) continue;
      out.push(snapshot);
    }
    for (const uid of this.#held.keys()) if (!present.has(uid)) this.#held.delete(uid);
    return out.length === merged.length ? merged : out;
  }

  #waits(uid: PodUid, now: number, context: HoldContext): boolean {
    let held = this.#held.get(uid);
    if (held === undefined) {
      if (context.isServed(uid)) return false;
      const from = context.sourcesOf(uid);
      if (from.length !== 1 || !isRuntime(from[0]!)) return false;
      const waiting = this.#specSources.filter((k) => context.hasSynced(k));
      if (waiting.length === 0) return false;
      held = { since: now, waiting: new Set(waiting) };
      this.#held.set(uid, held);
      for (const k of waiting) this.#toAsk.add(k);
    }
    const runtimeOnly = context.sourcesOf(uid).every(isRuntime);
    if (!runtimeOnly || held.waiting.size === 0 || now - held.since >= this.#maxHoldMs) {
      this.#held.delete(uid);
      return false;
    }
    return true;
  }
}
