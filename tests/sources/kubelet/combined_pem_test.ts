/**
 * The worked `--kubelet-url` example of docs/OPERATIONS.md names the
 * kubelet's own client credentials, `kubelet-client-current.pem`, which holds
 * certificate and key in one file, as both `--kubelet-client-cert` and
 * `--kubelet-client-key`: that must authenticate.
 *
 * @module
 */

import assert from "node:assert/strict";
import { silentLogger } from "../../../src/log.ts";
import { KubeletPodSource } from "../../../src/sources/kubelet/mod.ts";
import { startMtlsKubelet } from "./_fake_kubelet.ts";
import { makePki } from "./_pki.ts";

const PODS_TEXT = Deno.readTextFileSync(
  new URL("../../_fixtures/kubelet/pods.json", import.meta.url),
);

Deno.test("KubeletPodSource.list() takes certificate and key from one PEM file", async () => {
  await using pki = await makePki();
  const combined = `${pki.dir}/kubelet-client-current.pem`;
  await Deno.writeTextFile(
    combined,
    (await Deno.readTextFile(pki.clientCertFile)) + (await Deno.readTextFile(pki.clientKeyFile)),
  );
  await using kubelet = await startMtlsKubelet({
    dir: pki.dir,
    certFile: `${pki.dir}/server.crt`,
    keyFile: `${pki.dir}/server.key`,
    caFile: pki.caFile,
    body: PODS_TEXT,
  });
  using source = new KubeletPodSource({
    url: kubelet.url,
    caFile: pki.caFile,
    clientCertFile: combined,
    clientKeyFile: combined,
    log: silentLogger,
  });
  assert.equal((await source.list(new AbortController().signal)).length, 4);
});
