// PodResourcesClient on our gRPC layer against a podresources server of our
// own (in this process, on src/grpc): the calls, their paths and the
// statuses they pass on.
import assert from "node:assert/strict";
import { GrpcServer, type MethodHandler } from "../../../src/grpc/server.ts";
import { GrpcError, STATUS } from "../../../src/grpc/status.ts";
import {
  PodResourcesClient,
  podResourcesSocketPath,
} from "../../../src/sources/podresources/mod.ts";
import {
  decodeGetPodResourcesRequest,
  encodeAllocatableResourcesResponse,
  encodeListPodResourcesResponse,
  encodePodResources,
} from "../../_support/podresources_answers.ts";
import { MessageWriter } from "../../_support/message_writer.ts";
import { gpuPod } from "../../_fixtures/pod_resources.ts";

function unary(handle: (request: Uint8Array) => Uint8Array): MethodHandler {
  return { kind: "unary", handle: (request) => Promise.resolve(handle(request)) };
}

Deno.test("PodResourcesClient calls List, GetAllocatableResources and Get and passes statuses on", async () => {
  const dir = await Deno.makeTempDir({ prefix: "podresources-client-" });
  const path = `${dir}/kubelet.sock`;
  let refuse = false;
  const pod = gpuPod("ml", "a", ["GPU-1"]);
  const server = new GrpcServer({
    methods: new Map(Object.entries({
      "/v1.PodResourcesLister/List": unary(() => {
        if (refuse) throw new GrpcError(STATUS.RESOURCE_EXHAUSTED, "rejected by rate limit");
        return encodeListPodResourcesResponse([pod]);
      }),
      "/v1.PodResourcesLister/GetAllocatableResources": unary(() =>
        encodeAllocatableResourcesResponse({ devices: [], cpuIds: [0, 1], memory: [] })
      ),
      "/v1.PodResourcesLister/Get": unary((request) => {
        const { podName, podNamespace } = decodeGetPodResourcesRequest(request);
        if (podName !== "a" || podNamespace !== "ml") return new Uint8Array([0x0a, 0x02, 0xff]);
        return new MessageWriter().message(1, encodePodResources(pod)).finish();
      }),
    })),
  });
  server.serve(Deno.listen({ transport: "unix", path }));
  using client = new PodResourcesClient(`unix://${path}`);
  try {
    assert.deepEqual(await client.list(), [pod]);
    assert.deepEqual((await client.getAllocatableResources()).cpuIds, [0, 1]);
    assert.deepEqual(await client.get("ml", "a"), pod);
    await assert.rejects(
      client.get("ml", "other"),
      (err: GrpcError) => err.code === STATUS.INTERNAL && /podresources answer/.test(err.message),
    );
    refuse = true;
    await assert.rejects(
      client.list(),
      (err: GrpcError) => err.code === STATUS.RESOURCE_EXHAUSTED,
    );
  } finally {
    client.close();
    await server.close(0);
    await Deno.remove(dir, { recursive: true });
  }
  const gone = new PodResourcesClient(`unix://${dir}/none.sock`);
  await assert.rejects(gone.list(), (err: GrpcError) => err.code === STATUS.UNAVAILABLE);
  gone.close();
});

Deno.test("podResourcesSocketPath() takes unix:// or an absolute path, nothing else", () => {
  assert.equal(podResourcesSocketPath("unix:///a/b.sock"), "/a/b.sock");
  assert.equal(podResourcesSocketPath("/a/b.sock"), "/a/b.sock");
  assert.throws(() => podResourcesSocketPath("tcp://127.0.0.1:1"), /only unix sockets/);
  assert.throws(() => podResourcesSocketPath("a/b.sock"), /absolute/);
});
