import assert from "node:assert/strict";
import { buildCriDescriptor, renderCriDescriptorModule } from "../../../scripts/gen_cri_proto.ts";
import { criMessageCodec } from "../../../src/sources/cri/cri_codec.ts";
import type { ContainerStatus, ListPodSandboxResponse } from "../../../src/sources/cri/mod.ts";

Deno.test("CRI_DESCRIPTOR matches proto/cri/api.proto", async () => {
  const proto = await Deno.readTextFile(new URL("../../../proto/cri/api.proto", import.meta.url));
  const checkedIn = await Deno.readTextFile(
    new URL("../../../src/sources/cri/generated/cri_descriptor.ts", import.meta.url),
  );
  assert.equal(
    renderCriDescriptorModule(buildCriDescriptor(proto)),
    checkedIn,
    "run scripts/gen_cri_proto.ts",
  );
});

Deno.test("criMessageCodec() round-trips a message with defaults filled in", () => {
  const codec = criMessageCodec<ContainerStatus>("ContainerStatus");
  const decoded = codec.decode(codec.encode({
    id: "abc",
    state: 2,
    createdAt: 1_700_000_000_123_456_000,
    exitCode: -1,
    labels: { a: "b" },
  }));
  assert.equal(decoded.id, "abc");
  assert.equal(decoded.state, 2);
  assert.equal(Math.floor(decoded.createdAt / 1e9), 1_700_000_000);
  assert.equal(decoded.exitCode, -1);
  assert.deepEqual(decoded.labels, { a: "b" });
  assert.equal(decoded.reason, "");
  assert.equal(decoded.startedAt, 0);
  assert.equal(decoded.metadata, null);
});

Deno.test("criMessageCodec() decodes invalid UTF-8 as U+FFFD instead of failing the list", () => {
  // ListPodSandboxResponse{items: [PodSandbox{id: "ok", labels: {"k": <0xff 0xfe>}}]}
  const entry = [0x0a, 0x01, 0x6b, 0x12, 0x02, 0xff, 0xfe];
  const sandbox = [0x0a, 0x02, 0x6f, 0x6b, 0x2a, entry.length, ...entry];
  const bytes = new Uint8Array([0x0a, sandbox.length, ...sandbox]);
  const decoded = criMessageCodec<ListPodSandboxResponse>("ListPodSandboxResponse").decode(bytes);
  assert.equal(decoded.items[0]?.id, "ok");
  assert.equal(decoded.items[0]?.labels.k, "\ufffd\ufffd");
});

Deno.test("criMessageCodec() skips fields it does not declare", () => {
  // ContainerStatus{id: "x", <field 99, string "zz">}
  const bytes = new Uint8Array([0x0a, 0x01, 0x78, 0x9a, 0x06, 0x02, 0x7a, 0x7a]);
  const decoded = criMessageCodec<ContainerStatus>("ContainerStatus").decode(bytes);
  assert.equal(decoded.id, "x");
});

Deno.test("criMessageCodec() decodes strings of every length and script as protobufjs does", () => {
  const codec = criMessageCodec<ContainerStatus>("ContainerStatus");
  const values = [
    "",
    "a",
    "twelve-chars",
    "thirteen-char",
    "0f8e6a2c-1d4b-4c6e-9a7f-3b2d1e0c9a8b",
    "x".repeat(63),
    "y".repeat(64),
    "z".repeat(5000),
    "grüße/日本語/🚀 mixed after ascii",
  ];
  for (const value of values) {
    const decoded = codec.decode(codec.encode({ id: value, labels: { [value]: value } }));
    assert.equal(decoded.id, value);
    assert.deepEqual(decoded.labels, { [value]: value });
  }
  // A truncated string is an error, not a short read.
  const bytes = codec.encode({ id: "abcdef" });
  assert.throws(() => codec.decode(bytes.subarray(0, bytes.length - 2)), RangeError);
});
