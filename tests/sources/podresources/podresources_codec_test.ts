import assert from "node:assert/strict";
import {
  decodeAllocatableResourcesResponse,
  decodeGetPodResourcesResponse,
  decodeListPodResourcesResponse,
  encodeGetPodResourcesRequest,
} from "../../../src/sources/podresources/mod.ts";
import {
  decodeGetPodResourcesRequest,
  encodeAllocatableResourcesResponse,
  encodeListPodResourcesResponse,
  encodePodResources,
} from "../../_support/podresources_answers.ts";
import type { PodResources } from "../../../src/model/pod_resources.ts";
import { MessageWriter } from "../../_support/message_writer.ts";
import { containerResources } from "../../_fixtures/pod_resources.ts";

const FULL: PodResources = {
  namespace: "ml",
  name: "trainer-0",
  containers: [
    containerResources("main", {
      devices: [["nvidia.com/gpu", ["GPU-8f2c", "GPU-11aa"], [0, 1]]],
      cpuIds: [2, 3, 66],
      memory: [["hugepages-1Gi", 2 * 2 ** 30, [1]], ["memory", 4_000_000_000_000, []]],
      dynamicResources: [{
        claimName: "gpu-claim",
        claimNamespace: "ml",
        devices: [{
          driverName: "gpu.example.com",
          poolName: "node-1",
          deviceName: "gpu-3",
          shareId: "",
          cdiDevices: ["example.com/gpu=gpu3"],
        }, {
          driverName: "gpu.example.com",
          poolName: "node-1",
          deviceName: "gpu-4",
          shareId: "share-7",
          cdiDevices: [],
        }],
      }],
    }),
    containerResources("sidecar"),
  ],
  cpuIds: [2, 3, 66, 67],
  memory: [["memory", 1024, [0]]].map(([memoryType, size, numa]) => ({
    memoryType: memoryType as string,
    size: size as number,
    numaNodes: numa as number[],
  })),
};

Deno.test("podresources codec: a List answer with every kind of resource reads back equal", () => {
  const bytes = encodeListPodResourcesResponse([FULL, { ...FULL, name: "other", containers: [] }]);
  const decoded = decodeListPodResourcesResponse(bytes);
  assert.deepEqual(decoded, [FULL, { ...FULL, name: "other", containers: [] }]);
});

Deno.test("podresources codec: Get and GetAllocatableResources messages read back equal", () => {
  assert.deepEqual(decodeGetPodResourcesResponse(new MessageWriter().finish()), undefined);
  const get = new MessageWriter().message(1, encodePodResources(FULL)).finish();
  assert.deepEqual(decodeGetPodResourcesResponse(get), FULL);
  assert.deepEqual(decodeGetPodResourcesRequest(encodeGetPodResourcesRequest("ml", "t")), {
    podNamespace: "ml",
    podName: "t",
  });
  const allocatable = {
    devices: [{ resourceName: "nvidia.com/gpu", deviceIds: ["GPU-1"], numaNodes: [0] }],
    cpuIds: [0, 1, 2, 3],
    memory: [{ memoryType: "memory", size: 8 << 20, numaNodes: [0] }],
  };
  assert.deepEqual(
    decodeAllocatableResourcesResponse(encodeAllocatableResourcesResponse(allocatable)),
    allocatable,
  );
});

Deno.test("podresources codec: repeated int64 is read packed and unpacked, a negative as -1", () => {
  // cpu_ids = 3 of ContainerResources written unpacked, one varint per ID,
  // and NUMANode.ID = -5 as int64 writes it (ten bytes): read as -1.
  const topology = new MessageWriter().message(1, new MessageWriter().varint(1, -5).finish())
    .finish();
  const container = new MessageWriter()
    .string(1, "c")
    .varint(3, 5)
    .varint(3, 7)
    .packed(3, [9, 300])
    .message(
      2,
      new MessageWriter().string(1, "r").strings(2, ["d"]).message(3, topology).finish(),
    )
    .finish();
  const pod = new MessageWriter().string(1, "p").string(2, "ns").message(3, container).finish();
  const [decoded] = decodeListPodResourcesResponse(new MessageWriter().message(1, pod).finish());
  assert.deepEqual(decoded!.containers[0]!.cpuIds, [5, 7, 9, 300]);
  assert.deepEqual(decoded!.containers[0]!.devices[0]!.numaNodes, [-1]);
});

Deno.test("podresources codec: unknown fields and the removed class_name are skipped", () => {
  const dynamic = new MessageWriter()
    .string(1, "old-class")
    .string(2, "claim")
    .string(3, "ns")
    .string(99, "future")
    .finish();
  const container = new MessageWriter().string(1, "c").message(5, dynamic).varint(42, 1).finish();
  const pod = new MessageWriter().string(1, "p").message(3, container).finish();
  const [decoded] = decodeListPodResourcesResponse(new MessageWriter().message(1, pod).finish());
  assert.deepEqual(decoded!.containers[0]!.dynamicResources, [
    { claimName: "claim", claimNamespace: "ns", devices: [] },
  ]);
});

Deno.test("podresources codec: malformed answers are a TypeError naming the message", () => {
  const cases: Array<[string, Uint8Array, RegExp]> = [
    ["truncated length", new Uint8Array([0x0a, 0x05, 0x0a]), /ListPodResourcesResponse/],
    [
      "a string that is not UTF-8",
      new MessageWriter().message(1, new Uint8Array([0x0a, 0x01, 0xff])).finish(),
      /PodResources: field "name" is not valid UTF-8/,
    ],
    [
      "a message field sent as a varint",
      new MessageWriter().message(1, new Uint8Array([0x18, 0x01, 0x1a, 0x00])).finish(),
      /cpu_ids|containers/,
    ],
  ];
  for (const [name, bytes, message] of cases) {
    assert.throws(() => decodeListPodResourcesResponse(bytes), message, name);
  }
  assert.throws(
    () =>
      decodeListPodResourcesResponse(
        new MessageWriter().message(1, new Uint8Array([0x1a, 0x01, 0x08])).finish(),
      ),
    TypeError,
  );
});
