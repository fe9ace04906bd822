/**
 * PodCache.apply() cost by node size and churn: identical objects (the
 * baseline: a pointer comparison per pod), and 1% / 10% of pods handed back
 * as new objects with changed content (one encode and one event each). The
 * encoder is the production `encodePod()`, as in the daemon.
 */

import { PodCache } from "../src/cache/pod_cache.ts";
import type { PodSnapshot } from "../src/model/pod.ts";
import { encodePod } from "../src/proto/mod.ts";
import { makeSnapshot } from "../tests/_fixtures/pods.ts";
import { systemClock } from "../src/clock.ts";

const SIZES = [110, 1000, 5000];
const CHURN = [0, 0.01, 0.1];

function view(size: number): PodSnapshot[] {
  return Array.from({ length: size }, (_, i) =>
    makeSnapshot({
      uid: `00000000-0000-0000-0000-${String(i).padStart(12, "0")}`,
      name: `pod-${i}`,
      namespace: `ns-${i % 20}`,
      labels: { app: `app-${i % 50}`, gen: "a" },
      containers: ["app", "sidecar"],
      podIP: `10.0.${Math.floor(i / 250)}.${i % 250}`,
    }));
}

/** `base` with every `step`-th pod replaced by a changed copy. */
function changed(base: readonly PodSnapshot[], share: number): PodSnapshot[] {
  const count = Math.round(base.length * share);
  const step = base.length / count;
  const out = [...base];
  for (let k = 0; k < count; k++) {
    const i = Math.floor(k * step);
    const { uid, pod } = base[i]!;
    out[i] = { uid, pod: { ...pod, metadata: { ...pod.metadata, labels: { gen: "b" } } } };
  }
  return out;
}

for (const size of SIZES) {
  const base = view(size);
  for (const share of CHURN) {
    const cache = new PodCache({ encode: encodePod, clock: { ...systemClock, now: () => 0 } });
    cache.apply(base);
    // Alternate between two views: every apply() changes `share` of the pods.
    const views = share === 0 ? [base, base] : [changed(base, share), base];
    let turn = 0;
    Deno.bench({
      group: `apply ${size} pods`,
      name: `${share * 100}% changed`,
      baseline: share === 0,
      fn: () => {
        cache.apply(views[turn++ & 1]!);
      },
    });
  }
}
