// The runtime sockets the daemon tries when no --container-runtime-endpoint
// is given, and that the executable's permissions let it open.
import assert from "node:assert/strict";
import { CRI_SOCKETS } from "../../scripts/_permissions.ts";
import { DEFAULT_RUNTIME_ENDPOINTS } from "../../src/sources/cri/mod.ts";
import { SERVE_FLAGS } from "../../src/config_flags.ts";

Deno.test("autodetection tries containerd, CRI-O, k3s's containerd, then cri-dockerd", () => {
  assert.deepEqual(DEFAULT_RUNTIME_ENDPOINTS, [
    "unix:///run/containerd/containerd.sock",
    "unix:///run/crio/crio.sock",
    "unix:///var/run/crio/crio.sock",
    // k3s serves CRI only here; deploy/pods-api.service is ordered After=k3s.service.
    "unix:///run/k3s/containerd/containerd.sock",
    "unix:///var/run/cri-dockerd.sock",
  ]);
});

Deno.test("every autodetected runtime socket is one the executable may connect to", () => {
  for (const endpoint of DEFAULT_RUNTIME_ENDPOINTS) {
    const path = endpoint.slice("unix://".length);
    assert.ok(CRI_SOCKETS.includes(path), `${path} is in CRI_SOCKETS (read and write)`);
  }
});

Deno.test("--container-runtime-endpoint's help names every runtime autodetection tries", () => {
  const help = SERVE_FLAGS["container-runtime-endpoint"].help;
  for (const name of ["containerd", "CRI-O", "k3s", "cri-dockerd"]) {
    assert.ok(help.includes(name), `${name} in "${help}"`);
  }
});
