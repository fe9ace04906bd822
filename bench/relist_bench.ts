/**
 * Cost of one CRI relist (`CriPodSource.list()`) against an in-process
 * simulated runtime (no socket, no protobuf: the source's own work), with
 * 110 (the kubelet's default max pods), 1000 and 5000 pods of two containers
 * each, when nothing, 1% or 10% of the pods changed since the last relist.
 * The work should grow with what changed: the no-change case is the baseline.
 *
 * @module
 */

import { runKubeletPod } from "../src/sim/runtime/cri_kubelet.ts";
import { SimCriRuntime } from "../src/sim/runtime/cri_runtime.ts";
import { CONTAINER_STATE, CriPodSource } from "../src/sources/cri/mod.ts";
import { systemClock } from "../src/clock.ts";

interface Fixture {
  readonly runtime: SimCriRuntime;
  readonly source: CriPodSource;
  /** The first container of each pod: flipping its state changes that pod. */
  readonly flippable: readonly string[];
  next: number;
}

async function fixture(pods: number): Promise<Fixture> {
  const runtime = new SimCriRuntime({ clock: { ...systemClock, now: () => 1_700_000_000_000 } });
  const flippable: string[] = [];
  for (let i = 0; i < pods; i++) {
    const handle = await runKubeletPod(runtime, {
      name: `pod-${i}`,
      namespace: `ns-${i % 20}`,
      uid: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
      labels: { app: `app-${i % 50}`, "pod-template-hash": "5d8f7c9b6" },
      annotations: { "kubernetes.io/config.source": "api" },
      containers: [
        { name: "app", image: "registry.example/app:1.2.3", ports: [{ containerPort: 8080 }] },
        { name: "sidecar", image: "registry.example/proxy:2.0" },
      ],
    });
    flippable.push(handle.containerIds.app!);
  }
  const source = new CriPodSource({ runtime, runtimeName: "containerd", nodeName: "node-1" });
  await source.list(new AbortController().signal);
  return { runtime, source, flippable, next: 0 };
}

/** Changes `count` pods: their first container goes from running to exited or back. */
function change(f: Fixture, count: number): void {
  for (let i = 0; i < count; i++) {
    const id = f.flippable[f.next]!;
    f.next = (f.next + 1) % f.flippable.length;
    f.runtime.tamperContainer(id, (c) => {
      const running = c.state === CONTAINER_STATE.running;
      c.state = running ? CONTAINER_STATE.exited : CONTAINER_STATE.running;
      c.exitCode = running ? 1 : 0;
      c.finishedAt = running ? c.startedAt + 5e9 : 0;
    });
  }
}

const SIGNAL = new AbortController().signal;

for (const pods of [110, 1000, 5000]) {
  const f = await fixture(pods);
  for (const percent of [0, 1, 10]) {
    const count = Math.round((pods * percent) / 100);
    Deno.bench({
      group: `relist ${pods} pods`,
      name: `${percent}% changed (${count} pods)`,
      baseline: percent === 0,
      async fn(b) {
        change(f, count);
        b.start();
        await f.source.list(SIGNAL);
        b.end();
      },
    });
  }
}
