import assert from "node:assert/strict";
import { silentLogger } from "../../src/log.ts";
import { ApiServerPodSource } from "../../src/sources/apiserver/mod.ts";
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

Deno.test("createOptionalSources() builds the API server source from --apiserver or a kubeconfig", async () => {
  const [source] = createOptionalSources(
    { nodeName: "node-1", apiserver: "http://127.0.0.1:10256/" },
    deps,
  );
  assert.ok(source instanceof ApiServerPodSource);
  assert.equal(source.server, "http://127.0.0.1:10256");
  await source.stop();
  assert.throws(
    () => createOptionalSources({ nodeName: "node-1", apiserver: "10.0.0.1:6443" }, deps),
    /Cannot use --apiserver "10.0.0.1:6443": use in-cluster or an http\(s\) URL/,
  );
  assert.throws(
    () =>
      createOptionalSources(
        { nodeName: "node-1", apiserverKubeconfig: "/nonexistent/kubeconfig" },
        deps,
      ),
    /Cannot use kubeconfig "\/nonexistent\/kubeconfig"/,
  );
});
