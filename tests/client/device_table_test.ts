import assert from "node:assert/strict";
import {
  allocationRows,
  cpuList,
  deviceSummary,
  memorySize,
  POD_LEVEL,
} from "../../src/client/device_table.ts";
import { containerResources, podResources } from "../_fixtures/pod_resources.ts";

Deno.test("cpuList() prints CPU IDs as a cpuset list", () => {
  assert.equal(cpuList([]), "");
  assert.equal(cpuList([66, 2, 3, 3, 4, 8]), "2-4,8,66");
});

Deno.test("memorySize() uses the largest binary unit that divides the size", () => {
  assert.equal(memorySize(2 ** 31), "2Gi");
  assert.equal(memorySize(1536 * 2 ** 20), "1536Mi");
  assert.equal(memorySize(1000), "1000");
  assert.equal(memorySize(0), "0");
});

Deno.test("allocationRows(): devices, DRA devices, CPUs, memory, then the pod level", () => {
  const pod = {
    uid: "u",
    ...podResources("ml", "t", [
      containerResources("main", {
        devices: [["nvidia.com/gpu", ["G1", "G0"], [1]]],
        dynamicResources: [{
          claimName: "c",
          claimNamespace: "ml",
          devices: [{
            driverName: "gpu.example.com",
            poolName: "p",
            deviceName: "d0",
            shareId: "",
            cdiDevices: ["example.com/gpu=d0"],
          }],
        }],
      }),
    ]),
    cpuIds: [0, 1],
  };
  const rows = allocationRows([pod]).map((
    r,
  ) => [r.container, r.resource, r.device, r.numa, r.claim]);
  assert.deepEqual(rows, [
    ["main", "gpu.example.com", "gpu.example.com/p/d0", "-", "ml/c"],
    ["main", "nvidia.com/gpu", "G0", "1", ""],
    ["main", "nvidia.com/gpu", "G1", "1", ""],
    [POD_LEVEL, "cpu", "0-1", "-", ""],
  ]);
  assert.deepEqual(allocationRows([pod], "cpu").map((r) => r.device), ["0-1"]);
  assert.equal(deviceSummary(pod), "cpu:2,gpu.example.com:1,nvidia.com/gpu:2");
  assert.equal(deviceSummary(undefined), "<none>");
});
