/**
 * What `/readyz` says when the daemon is not ready.
 *
 * @module
 */

import type { SourceFeed } from "./source_feed.ts";
import type { SyncGate } from "./sync_gate.ts";

/**
 * Why the daemon is not ready: the gate's reasons (a source that never
 * synced, or that has been silent too long), each failing source's last
 * error appended so `/readyz` says why, not only which.
 *
 * @param gate The sync gate.
 * @param feeds Every source's feed (or its relister).
 * @returns The reasons; empty when ready.
 */
export function readinessReasons(
  gate: Pick<SyncGate, "notReadyReasons">,
  feeds: readonly Pick<SourceFeed, "name" | "consecutiveFailures" | "lastError">[],
): string[] {
  const reasons = [...gate.notReadyReasons()];
  if (reasons.length === 0) return reasons;
  for (const r of feeds) {
    if (r.consecutiveFailures === 0 || r.lastError === undefined) continue;
    const error = r.lastError instanceof Error ? r.lastError.message : String(r.lastError);
    reasons.push(`source "${r.name}" failed ${r.consecutiveFailures} time(s) in a row: ${error}`);
  }
  return reasons;
}
