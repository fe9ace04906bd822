import assert from "node:assert/strict";
import { silentLogger } from "../../src/log.ts";
import { KubeletPodSource } from "../../src/sources/kubelet/mod.ts";
import {
  closeOptionalSources,
  createOptionalSources,
  relistPeriodOf,
} from "../../src/sources/optional.ts";
import { StaticPodSource } from "../../src/sources/static/mod.ts";
import { FakeClock } from "../_fixtures/pods.ts";

const deps = { clock: new FakeClock(), log: silentLogger };

Deno.test("createOptionalSources() builds nothing without configuration", () => {
  assert.deepEqual(createOptionalSources({ nodeName: "node-1" }, deps), []);
  assert.deepEqual(
    createOptionalSources({ nodeName: "node-1", podManifestPath: "", kubeletUrl: "" }, deps),
    [],
  );
});

Deno.test("createOptionalSources() builds the static and kubelet sources", () => {
  const sources = createOptionalSources({
    nodeName: "node-1",
    podManifestPath: "/etc/kubernetes/manifests",
    fileCheckFrequencyMs: 5000,
    kubeletUrl: "https://127.0.0.1:10250",
    kubeletTokenFile: "",
    kubeletCaFile: "/var/lib/kubelet/pki/kubelet.crt",
    kubeletPollPeriodMs: 15_000,
  }, deps);
  assert.deepEqual(sources.map((s) => s.kind), ["static", "kubelet"]);
  assert.ok(sources[0] instanceof StaticPodSource);
  assert.ok(sources[1] instanceof KubeletPodSource);
  assert.equal(relistPeriodOf(sources[0]!, 1000), 5000);
  assert.equal(relistPeriodOf(sources[1]!, 1000), 15_000);
  assert.equal(relistPeriodOf({ kind: "cri", list: () => Promise.resolve([]) }, 1000), 1000);
  closeOptionalSources(sources);
});

Deno.test("createOptionalSources() rejects invalid kubelet settings", () => {
  assert.throws(
    () => createOptionalSources({ nodeName: "n", kubeletUrl: "127.0.0.1:10250" }, deps),
    TypeError,
  );
  assert.throws(
    () =>
      createOptionalSources(
        { nodeName: "n", kubeletUrl: "https://x", kubeletClientKey: "/k" },
        deps,
      ),
    TypeError,
  );
});
