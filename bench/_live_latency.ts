/**
 * Live delivery latency of a watch benchmark: the change timeline a server
 * (or its simulated node) wrote, against the arrivals the Go client wrote
 * (`bench/go/loadclient watch -out`). Shared by bench/transport/run.ts and
 * bench/h2load/live_phase.ts.
 *
 * @module
 */

/**
 * @param sorted Values in ascending order.
 * @param p The percentile, 0-100.
 * @returns The value at it (nearest rank), NaN for none.
 */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.round((p / 100) * (sorted.length - 1)))]!;
}

/** Latency figures of one run, ms. */
export interface Latencies {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  /** Arrivals matched to a change made after every watcher had synced. */
  readonly matched: number;
  /** Arrivals in the file. */
  readonly events: number;
}

/**
 * Per-event latency: each live arrival against the latest change of that pod
 * at or before it (the change the event carries), counting only changes made
 * after every watcher had synced.
 *
 * @param arrivalsFile Lines `watcher uid type arrival_ns` (the Go client's).
 * @param changes Change times (ms) per pod UID, ascending ({@linkcode readTimeline}).
 * @param syncedAtMs When the last watcher had its initial list, epoch ms.
 * @returns The figures.
 */
export async function latencies(
  arrivalsFile: string,
  changes: ReadonlyMap<string, readonly number[]>,
  syncedAtMs: number,
): Promise<Latencies> {
  const lat: number[] = [];
  let events = 0;
  for (const line of (await Deno.readTextFile(arrivalsFile)).split("\n")) {
    if (line === "") continue;
    events++;
    const [, uid, , at] = line.split(" ");
    const times = changes.get(uid!);
    if (times === undefined) continue;
    const arrival = Number(at) / 1e6;
    let lo = 0;
    let hi = times.length - 1;
    let hit = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (times[mid]! <= arrival) {
        hit = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    if (hit < 0 || times[hit]! < syncedAtMs) continue;
    lat.push(arrival - times[hit]!);
  }
  lat.sort((a, b) => a - b);
  return {
    p50: percentile(lat, 50),
    p99: percentile(lat, 99),
    max: lat.at(-1) ?? NaN,
    matched: lat.length,
    events,
  };
}

/**
 * Change times per pod UID from a timeline file.
 *
 * @param path The file.
 * @param kind `"node"`: a simulated node's lines `uid due_ms applied_ms`
 *   (bench/_sim_timeline.ts; the time the node applied it counts); `"go"`:
 *   the Go reference server's lines `uid sent_ns`.
 * @returns Times in ms, ascending, per UID.
 */
export async function readTimeline(
  path: string,
  kind: "node" | "go",
): Promise<Map<string, number[]>> {
  const out = new Map<string, number[]>();
  for (const line of (await Deno.readTextFile(path)).split("\n")) {
    if (line === "") continue;
    const parts = line.split(" ");
    const ms = kind === "node" ? Number(parts[2]) : Number(parts[1]) / 1e6;
    let list = out.get(parts[0]!);
    if (list === undefined) out.set(parts[0]!, list = []);
    list.push(ms);
  }
  for (const list of out.values()) list.sort((a, b) => a - b);
  return out;
}
