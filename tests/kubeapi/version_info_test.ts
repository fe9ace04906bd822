// /version says the platform as the API server does: Go's architecture names.
import assert from "node:assert/strict";
import { versionInfo } from "../../src/kubeapi/api_objects.ts";
import { goArch } from "../../src/version.ts";

Deno.test("/version names the platform as Kubernetes does (linux/amd64, linux/arm64)", () => {
  assert.equal(goArch("x86_64"), "amd64");
  assert.equal(goArch("aarch64"), "arm64");
  assert.equal(goArch("riscv64"), "riscv64");
  const info = versionInfo("v1.36.0-pods-api+0.1.0");
  assert.equal(info.platform, `linux/${goArch(Deno.build.arch)}`);
  assert.match(String(info.platform), /^linux\/(amd64|arm64)$/);
});
