// What the descriptor-driven codec adds for the PodQuery and podresources
// messages: strict reading, oneofs, proto3 `optional`, sub-messages given
// already encoded.
import assert from "node:assert/strict";
import { typedCodec } from "../../src/proto/plain_codec.ts";
import * as Query from "../../src/proto/generated/pod_query_types.ts";
import * as Kubelet from "../../src/proto/generated/podresources_types.ts";

const getRequest = typedCodec<Query.GetRequest>(
  Query.POD_QUERY_DESCRIPTOR,
  "podsapi.v1.GetRequest",
  { strict: true },
);

Deno.test("a oneof member is written at its default and named on decoding", () => {
  const bytes = getRequest.encode({ cgroupId: 0 });
  assert.deepEqual([...bytes], [0x50, 0x00]);
  const both = new Uint8Array([...getRequest.encode({ uid: "u" }), ...bytes]);
  const decoded = getRequest.decode(both);
  assert.equal(decoded.key, "cgroupId");
  assert.equal(decoded.cgroupId, 0);
  assert.equal(getRequest.decode(new Uint8Array()).key, null);
});

Deno.test("a proto3 optional field is written when set, even empty", () => {
  const claim = typedCodec<Kubelet.ClaimResource>(
    Kubelet.PODRESOURCES_DESCRIPTOR,
    "v1.ClaimResource",
  );
  assert.deepEqual([...claim.encode({ shareId: "" })], [0x2a, 0x00]);
  assert.deepEqual([...claim.encode({ shareId: undefined })], []);
});

Deno.test("a sub-message given as bytes is written as those bytes", () => {
  const selector = typedCodec<Query.Selector>(Query.POD_QUERY_DESCRIPTOR, "podsapi.v1.Selector");
  const inner = selector.encode({ namespace: "ns" });
  const list = typedCodec<Query.ListRequest>(Query.POD_QUERY_DESCRIPTOR, "podsapi.v1.ListRequest");
  assert.deepEqual(
    list.encode({ selector: inner }),
    list.encode({ selector: { namespace: "ns" } }),
  );
});

Deno.test("a strict codec names the innermost message and the field; a lenient one skips", () => {
  // ListPodResourcesResponse { pod_resources { containers { name: varint 1 } } }
  const container = [0x08, 0x01];
  const pod = [0x1a, container.length, ...container];
  const bytes = new Uint8Array([0x0a, pod.length, ...pod]);
  const name = "v1.ListPodResourcesResponse";
  const strict = typedCodec<Kubelet.ListPodResourcesResponse>(
    Kubelet.PODRESOURCES_DESCRIPTOR,
    name,
    { strict: true },
  );
  assert.throws(() => strict.decode(bytes), {
    name: "TypeError",
    message: 'Cannot decode ContainerResources: field "name" has wire type 0, expected 2',
  });
  const lenient = typedCodec<Kubelet.ListPodResourcesResponse>(
    Kubelet.PODRESOURCES_DESCRIPTOR,
    name,
  );
  assert.equal(lenient.decode(bytes).podResources[0]?.containers[0]?.name, "");
});

Deno.test("messages nested past the one depth bound are refused", () => {
  // No PodQuery message nests itself: unknown groups do, 101 deep.
  const bytes = new Uint8Array([...Array(101).fill(0x7b), ...Array(101).fill(0x7c)]);
  assert.throws(() => getRequest.decode(bytes), /nested deeper than 100/);
});
