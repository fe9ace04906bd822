// The PodQuery fields that say what pods hold: they round-trip, and a
// message without them is byte for byte what it was before they existed.
import assert from "node:assert/strict";
import {
  decodeGetRequest,
  decodeListDevicesRequest,
  decodeListDevicesResponse,
  decodeListRequest,
  decodeListResponse,
  decodePodResourcesMessage,
  decodeQueryGetResponse,
  decodeWatchEvent,
  decodeWatchRequest,
  encodeGetRequest,
  encodeListDevicesRequest,
  encodeListDevicesResponse,
  encodeListRequest,
  encodeListResponse,
  encodePodResourcesMessage,
  encodeQueryGetResponse,
  encodeWatchEvent,
  encodeWatchRequest,
  QUERY_EVENT_TYPE,
} from "../../src/proto/mod.ts";
import { normalizePodResources } from "../../src/model/pod_resources.ts";
import { containerResources, podResources } from "../_fixtures/pod_resources.ts";

const POD = new Uint8Array([10, 3, 1, 2, 3]);
const HELD = normalizePodResources({
  ...podResources("ml", "trainer-0", [
    containerResources("main", {
      devices: [["nvidia.com/gpu", ["GPU-2", "GPU-1"], [0]]],
      cpuIds: [4, 5],
      memory: [["hugepages-1Gi", 2 ** 31, [0]]],
      dynamicResources: [{
        claimName: "c",
        claimNamespace: "ml",
        devices: [{
          driverName: "gpu.example.com",
          poolName: "node-1",
          deviceName: "gpu-0",
          shareId: "s1",
          cdiDevices: ["example.com/gpu=gpu0"],
        }],
      }],
    }),
  ]),
  cpuIds: [4, 5, 6],
})!;

Deno.test("podsapi.v1.PodResources round-trips with the pod's UID", () => {
  assert.deepEqual(decodePodResourcesMessage(encodePodResourcesMessage("u1", HELD)), {
    uid: "u1",
    ...HELD,
  });
  assert.equal(
    encodePodResourcesMessage("u1", HELD),
    encodePodResourcesMessage("u1", HELD),
    "encoded once per allocation and UID",
  );
});

Deno.test("the resources fields of List, Get and Watch round-trip", () => {
  const held = encodePodResourcesMessage("u1", HELD);
  const selector = { resourceName: "nvidia.com/gpu", deviceId: "GPU-1" };
  const list = decodeListRequest(encodeListRequest({ selector, includeResources: true }));
  assert.deepEqual([list.selector.resourceName, list.selector.deviceId], [
    "nvidia.com/gpu",
    "GPU-1",
  ]);
  assert.equal(list.includeResources, true);
  assert.deepEqual(decodeListResponse(encodeListResponse([POD], "t", [held])).resources, [
    { uid: "u1", ...HELD },
  ]);
  const get = decodeGetRequest(
    encodeGetRequest({ key: { kind: "deviceId", id: "GPU-1" }, includeResources: true }),
  );
  assert.deepEqual([get.key, get.includeResources], [{ kind: "deviceId", id: "GPU-1" }, true]);
  const got = decodeQueryGetResponse(
    encodeQueryGetResponse(POD, "t", false, { resources: held, deviceContainers: ["main"] }),
  );
  assert.deepEqual([got.pod, got.resources?.uid, got.deviceContainers], [POD, "u1", ["main"]]);
  assert.equal(
    decodeWatchRequest(encodeWatchRequest({ includeResources: true })).includeResources,
    true,
  );
  const event = decodeWatchEvent(encodeWatchEvent(QUERY_EVENT_TYPE.MODIFIED, POD, "t", held));
  assert.deepEqual(event.resources, { uid: "u1", ...HELD });
});

Deno.test("messages without the new fields keep the bytes of before", () => {
  // What the encoders wrote before these fields existed, field by field.
  assert.deepEqual([...encodeListResponse([POD], "t")], [10, 5, ...POD, 18, 1, 116]);
  assert.deepEqual([...encodeQueryGetResponse(POD, "t", true)], [10, 5, ...POD, 18, 1, 116, 24, 1]);
  assert.deepEqual([...encodeListRequest({ selector: { namespace: "a" } })], [10, 3, 10, 1, 97]);
  assert.deepEqual([...encodeWatchRequest({ bookmarkSeconds: 1 })], [32, 1]);
});

Deno.test("ListDevices messages round-trip", () => {
  assert.deepEqual(decodeListDevicesRequest(encodeListDevicesRequest("nvidia.com/gpu")), {
    resourceName: "nvidia.com/gpu",
  });
  const response = {
    available: true,
    message: "",
    devices: [{
      resourceName: "nvidia.com/gpu",
      deviceId: "GPU-1",
      numaNodes: [0],
      allocatable: true,
      holders: [{ uid: "u1", namespace: "ml", name: "t", containers: ["main"] }],
    }, {
      resourceName: "nvidia.com/gpu",
      deviceId: "GPU-2",
      numaNodes: [1],
      allocatable: true,
      holders: [],
    }],
    cpuIds: [0, 1, 2, 3],
    freeCpuIds: [0, 1],
    memory: [{ memoryType: "memory", size: 2 ** 40, numaNodes: [0] }],
    resumeToken: "t.9",
  };
  assert.deepEqual(decodeListDevicesResponse(encodeListDevicesResponse(response)), response);
  assert.throws(() => decodeListDevicesResponse(new Uint8Array([8, 1, 26, 9])), TypeError);
});
