/**
 * The messages whose encoded bytes are pinned by `wire_golden.json`: rich
 * PodQuery answers and requests, and podresources answers, built from the
 * public encoders. `wire_golden_test.ts` compares today's bytes with the
 * fixture; `deno run -A tests/proto/_wire_golden_cases.ts` rewrites it.
 *
 * @module
 */

import {
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
import { encodeGetPodResourcesRequest } from "../../src/sources/podresources/mod.ts";
import {
  encodeAllocatableResourcesResponse,
  encodeListPodResourcesResponse,
  encodePodResources,
} from "../_support/podresources_answers.ts";
import type { PodResources } from "../../src/model/pod_resources.ts";

const POD_A = new Uint8Array([10, 5, 10, 3, 119, 101, 98, 18, 2, 8, 1]);
const POD_B = new Uint8Array(300).map((_, i) => (i * 7) & 0xff);

/** A pod holding a bit of everything, multi-byte text and large numbers included. */
const RICH: PodResources = {
  namespace: "ml-\u00e9quipe",
  name: "trainer-0",
  containers: [
    {
      name: "app",
      devices: [
        { resourceName: "nvidia.com/gpu", deviceIds: ["GPU-1", "GPU-2"], numaNodes: [0, 1] },
        { resourceName: "example.com/nic", deviceIds: ["nic0"], numaNodes: [] },
      ],
      cpuIds: [2, 3, 130],
      memory: [
        { memoryType: "memory", size: 8 * 2 ** 30, numaNodes: [0] },
        { memoryType: "hugepages-1Gi", size: 2 ** 40 + 5, numaNodes: [] },
      ],
      dynamicResources: [{
        claimName: "gpu-claim",
        claimNamespace: "ml",
        devices: [
          {
            driverName: "gpu.example.com",
            poolName: "node-1",
            deviceName: "gpu-0",
            shareId: "",
            cdiDevices: ["example.com/gpu=gpu0", "example.com/gpu=all"],
          },
          {
            driverName: "gpu.example.com",
            poolName: "node-1",
            deviceName: "gpu-1",
            shareId: "share-7",
            cdiDevices: [],
          },
        ],
      }],
    },
    { name: "sidecar", devices: [], cpuIds: [], memory: [], dynamicResources: [] },
  ],
  cpuIds: [0, 1],
  memory: [{ memoryType: "memory", size: 1024, numaNodes: [1] }],
};

const CONTAINER = {
  name: "app",
  containerId: "containerd://abc",
  init: true,
  ephemeral: false,
  initPid: 4242,
  cgroupPath: "/kubepods/pod1/abc",
  cgroupId: 2 ** 40 + 7,
  mntnsInode: 4026532461,
};

/** Every pinned message, by name, as encoded by the current code. */
export function goldenCases(): Record<string, Uint8Array> {
  const resources = encodePodResourcesMessage("uid-1", RICH);
  return {
    listResponse: encodeListResponse([POD_A, POD_B], "epoch.42", [resources]),
    listResponseBare: encodeListResponse([POD_A], ""),
    getResponse: encodeQueryGetResponse(POD_B, "epoch.43", false, {
      resources,
      deviceContainers: ["app", "sidecar"],
      container: CONTAINER,
    }),
    getResponseDeleted: encodeQueryGetResponse(POD_A, "epoch.44", true),
    watchAdded: encodeWatchEvent(QUERY_EVENT_TYPE.ADDED, POD_A, "epoch.45", resources),
    watchBookmark: encodeWatchEvent(QUERY_EVENT_TYPE.BOOKMARK, undefined, "epoch.46"),
    listDevicesResponse: encodeListDevicesResponse({
      available: true,
      message: "",
      devices: [
        {
          resourceName: "nvidia.com/gpu",
          deviceId: "GPU-1",
          numaNodes: [0],
          allocatable: true,
          holders: [{ uid: "uid-1", namespace: "ml", name: "trainer-0", containers: ["app"] }],
        },
        {
          resourceName: "nvidia.com/gpu",
          deviceId: "GPU-9",
          numaNodes: [],
          allocatable: false,
          holders: [],
        },
      ],
      cpuIds: [0, 1, 2, 3],
      freeCpuIds: [3],
      memory: [{ memoryType: "memory", size: 2 ** 34, numaNodes: [0, 1] }],
      resumeToken: "epoch.47",
    }),
    listRequest: encodeListRequest({
      selector: { namespace: "ml", labelSelector: "a=b", resourceName: "nvidia.com/gpu" },
      mask: ["metadata.name", "status.phase"],
      includeResources: true,
    }),
    getRequestName: encodeGetRequest({
      key: { kind: "name", namespace: "ml", name: "trainer-0" },
      mask: ["spec"],
      includeDeleted: true,
    }),
    getRequestPodIp: encodeGetRequest({ key: { kind: "podIp", ip: "fd00::1" } }),
    watchRequest: encodeWatchRequest({
      selector: { fieldSelector: "spec.nodeName=n1" },
      resumeToken: "epoch.48",
      bookmarkSeconds: 30,
      includeResources: true,
    }),
    listDevicesRequest: encodeListDevicesRequest("nvidia.com/gpu"),
    podresourcesList: encodeListPodResourcesResponse([RICH, {
      namespace: "default",
      name: "idle",
      containers: [],
      cpuIds: [],
      memory: [],
    }]),
    podresourcesPod: encodePodResources(RICH),
    podresourcesAllocatable: encodeAllocatableResourcesResponse({
      devices: RICH.containers[0]!.devices,
      cpuIds: [0, 1, 2, 3, 130],
      memory: RICH.memory,
    }),
    podresourcesGetRequest: encodeGetPodResourcesRequest("ml", "trainer-0"),
  };
}

/** Where the pinned bytes are kept. */
export const GOLDEN_FILE = new URL("../_fixtures/wire_golden.json", import.meta.url);

/** @returns Each case's bytes as hex. */
export function goldenHex(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, bytes] of Object.entries(goldenCases())) {
    out[name] = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }
  return out;
}

if (import.meta.main) {
  await Deno.writeTextFile(GOLDEN_FILE, JSON.stringify(goldenHex(), null, 2) + "\n");
}
