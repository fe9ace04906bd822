/**
 * ListPods body assembly from cached per-pod bytes, for 110, 1000 and 5000
 * simulated pods: the naive concatenation of per-pod frames as the baseline,
 * then `encodeListPodsResponse()` (sized once, one copy), then what ListPods
 * serves: `MaskedBytesCache.listBytes()` on an unchanged cache (a lookup), a
 * changed one (re-assembly), and a 3-path mask (cold: project + encode every
 * pod; warm: masked pod bytes cached, list re-assembled).
 *
 * @module
 */

import type { CachedPod } from "../src/cache/types.ts";
import { FieldMaskCache } from "../src/fieldmask/mod.ts";
import { encodeListPodsResponse, encodePod, POD_SCHEMA } from "../src/proto/mod.ts";
import { MaskedBytesCache } from "../src/server/masked_bytes_cache.ts";
import { SimulatedNode } from "../src/sim/mod.ts";
import { systemClock } from "../src/clock.ts";

const MASKS = new FieldMaskCache(POD_SCHEMA);
const ALL = MASKS.parseText("");
const MASK_3 = MASKS.parseText("metadata.name,status.phase,status.podIPs");

function cachedPods(count: number): CachedPod[] {
  const node = new SimulatedNode({
    clock: { ...systemClock, now: () => 1_767_225_600_000 },
    pods: count,
    seed: 1,
  });
  return node.pods()
    .map((pod, i) => ({ uid: pod.metadata.uid, pod, version: i + 1, bytes: encodePod(pod) }))
    .sort((a, b) => a.uid < b.uid ? -1 : 1);
}

/** The naive way: frame each pod into its own array, then concatenate. */
function concatFrames(pods: readonly CachedPod[]): Uint8Array {
  const frames = pods.map((p) => encodeListPodsResponse([p.bytes]));
  let size = 0;
  for (const f of frames) size += f.length;
  const out = new Uint8Array(size);
  let pos = 0;
  for (const f of frames) {
    out.set(f, pos);
    pos += f.length;
  }
  return out;
}

for (const count of [110, 1000, 5000]) {
  const pods = cachedPods(count);
  const bytes = pods.map((p) => p.bytes);
  const group = `list of ${count} pods`;
  const warm = new MaskedBytesCache({ encode: encodePod });
  warm.listBytes(ALL, pods);
  const maskedWarm = new MaskedBytesCache({ encode: encodePod });
  maskedWarm.listBytes(MASK_3, pods);

  Deno.bench({
    group,
    name: "concat of per-pod frames",
    baseline: true,
    fn: () => void concatFrames(pods),
  });
  Deno.bench({
    group,
    name: "encodeListPodsResponse()",
    fn: () => void encodeListPodsResponse(bytes),
  });
  Deno.bench({
    group,
    name: "listBytes(), unchanged cache",
    fn: () => void warm.listBytes(ALL, pods),
  });
  Deno.bench({
    group,
    name: "listBytes(), changed cache",
    fn: () => void warm.listBytes(ALL, [...pods]),
  });
  Deno.bench({
    group,
    name: "listBytes(), 3-path mask, masked pods cached",
    fn: () => void maskedWarm.listBytes(MASK_3, [...pods]),
  });
  Deno.bench({
    group,
    name: "listBytes(), 3-path mask, cold",
    fn: () => void new MaskedBytesCache({ encode: encodePod }).listBytes(MASK_3, pods),
  });
}
