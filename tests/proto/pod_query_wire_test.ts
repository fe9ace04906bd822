import assert from "node:assert/strict";
import {
  decodeGetRequest,
  decodeListRequest,
  decodeListResponse,
  decodeQueryGetResponse,
  decodeWatchEvent,
  decodeWatchRequest,
  encodeGetRequest,
  encodeListRequest,
  encodeListResponse,
  encodeQueryGetResponse,
  encodeWatchEvent,
  encodeWatchRequest,
  QUERY_EVENT_TYPE,
} from "../../src/proto/mod.ts";

const POD = new Uint8Array([10, 3, 1, 2, 3]);

Deno.test("PodQuery requests round-trip through their hand-written encoding", () => {
  assert.deepEqual(
    decodeListRequest(encodeListRequest({
      selector: { namespace: "ns", labelSelector: "a=b", fieldSelector: "status.phase=Running" },
      mask: ["status.phase", "metadata.labels"],
    })),
    {
      selector: {
        namespace: "ns",
        labelSelector: "a=b",
        fieldSelector: "status.phase=Running",
        resourceName: "",
        deviceId: "",
      },
      mask: ["status.phase", "metadata.labels"],
      includeResources: false,
    },
  );
  assert.deepEqual(decodeListRequest(new Uint8Array()), {
    selector: {
      namespace: "",
      labelSelector: "",
      fieldSelector: "",
      resourceName: "",
      deviceId: "",
    },
    mask: undefined,
    includeResources: false,
  });
  assert.deepEqual(decodeListRequest(encodeListRequest({ mask: [] })).mask, []);
  for (
    const key of [
      { kind: "uid", uid: "u" },
      { kind: "name", namespace: "ns", name: "n" },
      { kind: "containerId", id: "containerd://abc" },
      { kind: "podIp", ip: "fd00::1" },
      { kind: "deviceId", id: "GPU-8f2c" },
    ] as const
  ) {
    assert.deepEqual(decodeGetRequest(encodeGetRequest({ key, includeDeleted: true })), {
      key,
      mask: undefined,
      includeDeleted: true,
      includeResources: false,
    });
  }
  assert.deepEqual(
    decodeWatchRequest(encodeWatchRequest({ resumeToken: "abc.5", bookmarkSeconds: 30 })),
    {
      selector: {
        namespace: "",
        labelSelector: "",
        fieldSelector: "",
        resourceName: "",
        deviceId: "",
      },
      mask: undefined,
      resumeToken: "abc.5",
      bookmarkSeconds: 30,
      includeResources: false,
    },
  );
});

Deno.test("decodeGetRequest() keeps the last member of the key oneof, as protobuf does", () => {
  const a = encodeGetRequest({ key: { kind: "uid", uid: "first" } });
  const b = encodeGetRequest({ key: { kind: "podIp", ip: "10.0.0.1" } });
  const both = new Uint8Array([...a, ...b]);
  assert.deepEqual(decodeGetRequest(both).key, { kind: "podIp", ip: "10.0.0.1" });
  assert.equal(decodeGetRequest(new Uint8Array()).key, undefined);
});

Deno.test("PodQuery request decoders reject malformed bytes with a TypeError", async (t) => {
  const cases: Array<[string, Uint8Array]> = [
    ["truncated length", new Uint8Array([10, 5, 1])],
    ["uid as varint", new Uint8Array([8, 1])],
    ["invalid UTF-8", new Uint8Array([10, 1, 0xff])],
    ["wire type 7", new Uint8Array([15])],
  ];
  for (const [name, bytes] of cases) {
    await t.step(name, () => assert.throws(() => decodeGetRequest(bytes), TypeError));
  }
  assert.throws(() => decodeWatchRequest(new Uint8Array([32, 0x80])), TypeError);
});

Deno.test("PodQuery responses frame pod bytes as they are, with tokens and flags", () => {
  assert.deepEqual(decodeListResponse(encodeListResponse([POD, POD], "t.1")), {
    pods: [POD, POD],
    resumeToken: "t.1",
    resources: [],
  });
  assert.deepEqual(decodeQueryGetResponse(encodeQueryGetResponse(POD, "t.2", true)), {
    pod: POD,
    resumeToken: "t.2",
    deleted: true,
    resources: undefined,
    deviceContainers: [],
    container: undefined,
  });
  assert.deepEqual(
    decodeWatchEvent(encodeWatchEvent(QUERY_EVENT_TYPE.BOOKMARK, undefined, "t.3")),
    {
      type: QUERY_EVENT_TYPE.BOOKMARK,
      pod: undefined,
      resumeToken: "t.3",
      resources: undefined,
    },
  );
  // proto3 leaves defaults out: an ADDED event without token is type + pod only.
  assert.deepEqual([...encodeWatchEvent(QUERY_EVENT_TYPE.ADDED, POD, "")], [8, 1, 18, 5, ...POD]);
  assert.throws(() => decodeWatchEvent(new Uint8Array([8, 9])), TypeError);
});

Deno.test("GetRequest process keys round-trip after the old fields, numbers unchanged", async (t) => {
  const cases = [
    { kind: "pid", pid: 4242 },
    { kind: "pid", pid: 0 },
    { kind: "cgroupId", cgroupId: 2 ** 40 + 7 },
    { kind: "cgroupPath", path: "/kubepods/besteffort/pod1/abc" },
    { kind: "mntns", inode: 4026532461 },
  ] as const;
  for (const key of cases) {
    await t.step(`${key.kind} ${JSON.stringify(key)}`, () => {
      const got = decodeGetRequest(encodeGetRequest({ key, mask: ["metadata.name"] }));
      assert.deepEqual(got.key, key);
      assert.deepEqual(got.mask, ["metadata.name"]);
    });
  }
  await t.step("a negative PID decodes negative", () => {
    const got = decodeGetRequest(encodeGetRequest({ key: { kind: "pid", pid: -5 } }));
    assert.ok(got.key?.kind === "pid" && got.key.pid < 0);
  });
  await t.step("a uid request's bytes are what they were", () => {
    assert.deepEqual(
      [...encodeGetRequest({ key: { kind: "uid", uid: "u" } })],
      [10, 1, 117],
    );
  });
});

Deno.test("GetResponse carries a process lookup's container in field 6", () => {
  const container = {
    name: "app",
    containerId: "containerd://abc",
    init: false,
    ephemeral: true,
    initPid: 77,
    cgroupPath: "/kubepods/pod1/abc",
    cgroupId: 1234,
    mntnsInode: 4026532461,
  };
  const bytes = encodeQueryGetResponse(POD, "t", false, { container });
  const got = decodeQueryGetResponse(bytes);
  assert.deepEqual(got.container, container);
  assert.deepEqual(got.pod, POD);
  // The old fields come first, as before: an old client reads them unchanged.
  assert.deepEqual(
    [...bytes.subarray(0, encodeQueryGetResponse(POD, "t", false).length)],
    [...encodeQueryGetResponse(POD, "t", false)],
  );
});
