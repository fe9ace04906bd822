/**
 * A simulated node's change timeline, for watch latency: each change with the
 * time the simulation scheduled it (`due`) and the wall time it was applied
 * to the node (`applied`). Written by the in-process daemon of the load and
 * transport benchmarks (bench/load/sim_daemon.ts) and by the simulated
 * runtime of the daemon-alone live phase (bench/h2load/sim_runtime.ts).
 *
 * @module
 */

import type { PodObject } from "../src/model/pod.ts";
import type { SimulatedNode } from "../src/sim/mod.ts";

/** Wall-clock milliseconds with sub-millisecond precision. */
function wallMs(): number {
  return performance.timeOrigin + performance.now();
}

/** One change: pod UID, scheduled time, time applied to the node (epoch ms). */
export type Change = [uid: string, dueMs: number, appliedMs: number];

/**
 * Makes the node apply its due mutations one at a time, so that each change
 * is attributed to its own due time; records them in `changes`.
 *
 * @param node The simulated node, just built.
 * @param startMs The node's start time (epoch ms): its clock when it was built.
 * @param changes Where each change goes.
 */
export function recordChanges(node: SimulatedNode, startMs: number, changes: Change[]): void {
  const known = new Map<string, PodObject>();
  for (const pod of node.pods()) known.set(pod.metadata.uid, pod);
  const changedUids = (): string[] => {
    const changed: string[] = [];
    const seen = new Set<string>();
    for (const pod of node.pods()) {
      const uid = pod.metadata.uid;
      seen.add(uid);
      if (known.get(uid) !== pod) {
        changed.push(uid);
        known.set(uid, pod);
      }
    }
    if (seen.size !== known.size) {
      for (const uid of known.keys()) {
        if (!seen.has(uid)) {
          changed.push(uid);
          known.delete(uid);
        }
      }
    }
    return changed;
  };
  const advance = node.advanceTo.bind(node);
  const churn = node.churnPerSecond;
  node.advanceTo = (nowMs: number): number => {
    let applied = 0;
    for (let guard = 0; churn > 0 && guard < 100_000; guard++) {
      const k = node.mutations + node.skippedMutations + 1;
      const due = startMs + Math.ceil((k * 1000) / churn);
      if (due > nowMs) break;
      const n = advance(due);
      if (n === 0) break;
      applied += n;
      const at = wallMs();
      for (const uid of changedUids()) changes.push([uid, due, at]);
    }
    return applied + advance(nowMs);
  };
}

/**
 * @param changes The recorded changes.
 * @returns The timeline file's text: `uid due_ms applied_ms` per line.
 */
export function timelineText(changes: readonly Change[]): string {
  return changes.map((c) => `${c[0]} ${c[1]} ${c[2].toFixed(3)}`).join("\n") + "\n";
}
