import { deepStrictEqual, equal, throws } from "node:assert/strict";
import protobuf from "protobufjs";
import {
  decodeGetPodRequest,
  decodeGetPodResponse,
  decodeListPodsResponse,
  decodePod,
  decodePodWatchResponse,
  decodeWatchPodsEvent,
  encodeGetPodRequest,
  encodeListPodsResponse,
  encodePod,
  encodeWatchPodsEvent,
  getPodResponseHead,
  PODS_API_DESCRIPTOR,
  podWatchResponseHead,
  WATCH_EVENT_TYPE,
  type WatchEventType,
  watchPodsEventHead,
} from "../../src/proto/mod.ts";
import type { PodObject } from "../../src/model/pod.ts";
import { concatBytes } from "../../src/bytes_concat.ts";

function pod(uid: string): PodObject {
  return {
    metadata: { uid, name: `pod-${uid}`, namespace: "default", labels: { app: "x" } },
    status: { phase: "Running" },
  };
}

const POD_A = encodePod(pod("a"));
const POD_B = encodePod(pod("b".repeat(200)));

/** protobufjs hands back a Buffer; compare as a plain Uint8Array. */
function schemaEncode(name: string, message: Record<string, unknown>): Uint8Array {
  return Uint8Array.from(type(name).encode(message).finish());
}

/** protobufjs over the same descriptor: an independent reader of our bytes. */
const REFERENCE = protobuf.Root.fromJSON(PODS_API_DESCRIPTOR as unknown as protobuf.INamespace);
REFERENCE.resolveAll();

function type(name: string): protobuf.Type {
  return REFERENCE.lookupType(name);
}

Deno.test("encodeListPodsResponse() round-trips and matches both services' schemas", () => {
  const bytes = encodeListPodsResponse([POD_A, POD_B]);
  deepStrictEqual(decodeListPodsResponse(bytes), [POD_A, POD_B]);
  deepStrictEqual(decodeListPodsResponse(encodeListPodsResponse([])), []);
  const alpha = type("v1alpha1.ListPodsResponse").decode(bytes).toJSON();
  equal(alpha.pods.length, 2);
  const v1 = type(".PodListResponse").decode(bytes).toJSON();
  equal(v1.pods[1].metadata.uid, "b".repeat(200));
  deepStrictEqual(schemaEncode("v1alpha1.ListPodsResponse", { pods: [POD_A, POD_B] }), bytes);
});

Deno.test("a GetPodResponse or PodWatchResponse head and its pod decode as one message", () => {
  const get = concatBytes([getPodResponseHead(POD_B), POD_B]);
  deepStrictEqual(decodeGetPodResponse(get), POD_B);
  deepStrictEqual(decodePod(decodeGetPodResponse(get)), pod("b".repeat(200)));
  deepStrictEqual(
    type(".PodGetResponse").decode(get).toJSON().pod.metadata.name,
    `pod-${"b".repeat(200)}`,
  );
  const watch = concatBytes([podWatchResponseHead(POD_A), POD_A]);
  deepStrictEqual(watch, concatBytes([getPodResponseHead(POD_A), POD_A]));
  deepStrictEqual(decodePodWatchResponse(watch), POD_A);
  deepStrictEqual(decodeGetPodResponse(new Uint8Array(0)), new Uint8Array(0));
});

Deno.test("encodeWatchPodsEvent() round-trips every event type", async (t) => {
  for (const [name, value] of Object.entries(WATCH_EVENT_TYPE)) {
    await t.step(name, () => {
      const podBytes = value === WATCH_EVENT_TYPE.INITIAL_SYNC_COMPLETE ? undefined : POD_A;
      const bytes = encodeWatchPodsEvent(value, podBytes);
      deepStrictEqual(decodeWatchPodsEvent(bytes), { type: value, pod: podBytes });
      const viaSchema = schemaEncode("v1alpha1.WatchPodsEvent", { type: value, pod: podBytes });
      deepStrictEqual(bytes, viaSchema);
    });
  }
  deepStrictEqual(
    encodeWatchPodsEvent(WATCH_EVENT_TYPE.INITIAL_SYNC_COMPLETE, undefined),
    Uint8Array.of(8, 4),
  );
  throws(() => decodeWatchPodsEvent(Uint8Array.of(8, 9)), {
    name: "TypeError",
    message: /unknown event type "9"/,
  });
});

Deno.test("decodeGetPodRequest() reads the UID and skips unknown fields", () => {
  deepStrictEqual(decodeGetPodRequest(encodeGetPodRequest("5f1c-ü")), { podUID: "5f1c-ü" });
  deepStrictEqual(decodeGetPodRequest(new Uint8Array(0)), { podUID: "" });
  const viaSchema = schemaEncode(".PodGetRequest", { podUID: "abc" });
  deepStrictEqual(encodeGetPodRequest("abc"), viaSchema);
  // Unknown varint 2, fixed64 3, fixed32 4, group 5 { 6: varint }, then podUID "x", then unknown bytes 7.
  const input = Uint8Array.of(
    0x10,
    0x96,
    0x01,
    0x19,
    1,
    2,
    3,
    4,
    5,
    6,
    7,
    8,
    0x25,
    1,
    2,
    3,
    4,
    0x2b,
    0x30,
    0x01,
    0x2c,
    0x0a,
    0x01,
    0x78,
    0x3a,
    0x02,
    0xff,
    0xff,
  );
  deepStrictEqual(decodeGetPodRequest(input), { podUID: "x" });
  // The last occurrence of a scalar field wins.
  deepStrictEqual(decodeGetPodRequest(Uint8Array.of(0x0a, 0x01, 0x61, 0x0a, 0x01, 0x62)), {
    podUID: "b",
  });
});

Deno.test("decodeGetPodRequest() rejects malformed bytes with a TypeError", async (t) => {
  const cases: { name: string; input: number[]; message: RegExp }[] = [
    { name: "truncated length", input: [0x0a, 0x05, 0x61], message: /runs past the end/ },
    { name: "truncated varint", input: [0x10, 0x80], message: /truncated varint/ },
    { name: "truncated tag", input: [0x80], message: /truncated varint/ },
    { name: "field number 0", input: [0x02, 0x00], message: /field number 0/ },
    { name: "invalid wire type", input: [0x0e], message: /invalid wire type "6"/ },
    { name: "stray end group", input: [0x0c], message: /invalid wire type "4"/ },
    { name: "unterminated group", input: [0x0b, 0x10, 0x01], message: /unterminated group/ },
    { name: "mismatched group end", input: [0x0b, 0x14], message: /mismatched end of group/ },
    {
      name: "podUID with wrong wire type",
      input: [0x08, 0x01],
      message: /field "podUID" has wire type 0/,
    },
    { name: "invalid UTF-8", input: [0x0a, 0x02, 0xc3, 0x28], message: /not valid UTF-8/ },
    { name: "overlong varint", input: [0x10, ...Array(11).fill(0xff)], message: /varint/ },
    { name: "truncated fixed64", input: [0x19, 1, 2], message: /runs past the end/ },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      throws(() => decodeGetPodRequest(Uint8Array.from(c.input)), (error: unknown) => {
        equal((error as Error).name, "TypeError");
        equal(error instanceof TypeError, true);
        equal(c.message.test((error as Error).message), true, (error as Error).message);
        equal((error as Error).message.startsWith("Cannot decode GetPodRequest: "), true);
        return true;
      });
    });
  }
});

Deno.test("a single-pod message's head followed by the pod is the whole message", () => {
  const joined = (head: Uint8Array, body: Uint8Array) => concatBytes([head, body]);
  // Lengths on both sides of each varint width (1, 2 and 3 bytes).
  for (const size of [0, 1, 127, 128, 16_383, 16_384, 70_000]) {
    const body = new Uint8Array(size).fill(7);
    deepStrictEqual(decodeGetPodResponse(joined(getPodResponseHead(body), body)), body);
    deepStrictEqual(decodePodWatchResponse(joined(podWatchResponseHead(body), body)), body);
    for (const type of Object.values(WATCH_EVENT_TYPE) as WatchEventType[]) {
      deepStrictEqual(
        joined(watchPodsEventHead(type, body), body),
        encodeWatchPodsEvent(type, body),
        `type ${type}, ${size} bytes`,
      );
    }
  }
  deepStrictEqual(
    watchPodsEventHead(WATCH_EVENT_TYPE.INITIAL_SYNC_COMPLETE),
    new Uint8Array([8, 4]),
  );
  equal(watchPodsEventHead(WATCH_EVENT_TYPE.UNSPECIFIED).length, 0);
});
