import assert from "node:assert/strict";
import { concatBytes } from "../../src/bytes_concat.ts";
import type { CachedPod } from "../../src/cache/types.ts";
import { FieldMaskCache, project } from "../../src/fieldmask/mod.ts";
import {
  encodeListPodsResponse,
  encodePod,
  encodeWatchPodsEvent,
  POD_SCHEMA,
  podWatchResponseHead,
  WATCH_EVENT_TYPE,
} from "../../src/proto/mod.ts";
import { frameMessage } from "../../src/grpc/message_framing.ts";
import { MaskedBytesCache } from "../../src/server/masked_bytes_cache.ts";
import { makePod } from "../_fixtures/pods.ts";

const MASKS = new FieldMaskCache(POD_SCHEMA);
const ALL = MASKS.parseText("");
const MASK = MASKS.parseText("metadata.name,status.phase");

function cached(i: number, version = i + 1): CachedPod {
  const pod = makePod({ uid: `uid-${i}`, name: `pod-${i}` });
  return Object.freeze({ uid: pod.metadata.uid, pod, version, bytes: encodePod(pod) });
}

Deno.test("MaskedBytesCache.listBytes() answers an unchanged list from memory", () => {
  const cache = new MaskedBytesCache({ encode: encodePod });
  const pods = [cached(1), cached(2)];
  const first = cache.listBytes(ALL, pods);
  assert.deepEqual(first.message, encodeListPodsResponse(pods.map((p) => p.bytes)));
  assert.equal(cache.listBytes(ALL, pods), first);
});

Deno.test("MaskedBytesCache.listBytes() re-assembles a changed list", () => {
  const cache = new MaskedBytesCache({ encode: encodePod });
  const pods = [cached(1), cached(2)];
  const before = cache.listBytes(ALL, pods);
  const after = cache.listBytes(ALL, [pods[0]!, cached(2, 7), cached(3)]);
  assert.notEqual(after, before);
  assert.deepEqual(
    after.message,
    encodeListPodsResponse([pods[0]!.bytes, cached(2, 7).bytes, cached(3).bytes]),
  );
});

Deno.test("MaskedBytesCache.listBytes() frames each pod projected by the mask", () => {
  const cache = new MaskedBytesCache({ encode: encodePod });
  const pods = [cached(1), cached(2)];
  const expected = encodeListPodsResponse(pods.map((p) => encodePod(project(MASK, p.pod))));
  assert.deepEqual(cache.listBytes(MASK, pods).message, expected);
  assert.deepEqual(cache.listBytes(MASK, [...pods]).message, expected);
});

Deno.test("MaskedBytesCache.bytesOf() encodes a pod version once per mask", () => {
  let calls = 0;
  const cache = new MaskedBytesCache({
    encode: (pod) => {
      calls++;
      return encodePod(pod);
    },
  });
  const pod = cached(1);
  const a = cache.bytesOf(MASK, pod);
  assert.equal(cache.bytesOf(MASK, pod), a);
  assert.equal(calls, 1);
  assert.equal(cache.bytesOf(ALL, pod), pod.bytes);
  cache.bytesOf(MASK, cached(1, 9));
  assert.equal(calls, 2);
});

Deno.test("MaskedBytesCache.bytesOf() keeps its memory bound", () => {
  const cache = new MaskedBytesCache({ encode: encodePod, maxBytes: 2048 });
  for (let i = 0; i < 50; i++) cache.bytesOf(MASK, cached(i));
  assert.ok(cache.size <= 2048, `size ${cache.size}`);
  assert.ok(cache.size > 0);
});

Deno.test("MaskedBytesCache.frameOf() shares unmasked frames between watchers", () => {
  const cache = new MaskedBytesCache({ encode: encodePod });
  const pod = cached(1);
  const added = cache.frameOf(ALL, pod, WATCH_EVENT_TYPE.ADDED, false);
  assert.deepEqual(added.message, encodeWatchPodsEvent(WATCH_EVENT_TYPE.ADDED, pod.bytes));
  assert.equal(
    cache.frameOf(ALL, pod, WATCH_EVENT_TYPE.ADDED, false),
    added,
  );
  assert.deepEqual(
    cache.frameOf(ALL, pod, WATCH_EVENT_TYPE.MODIFIED, false).message,
    encodeWatchPodsEvent(WATCH_EVENT_TYPE.MODIFIED, pod.bytes),
  );
  assert.deepEqual(
    cache.frameOf(ALL, pod, WATCH_EVENT_TYPE.ADDED, true).message,
    concatBytes([podWatchResponseHead(pod.bytes), pod.bytes]),
  );
  assert.deepEqual(
    cache.frameOf(MASK, pod, WATCH_EVENT_TYPE.DELETED, false).message,
    encodeWatchPodsEvent(WATCH_EVENT_TYPE.DELETED, encodePod(project(MASK, pod.pod))),
  );
});

Deno.test("MaskedBytesCache frames end with the pod's own bytes, not a copy", () => {
  const cache = new MaskedBytesCache({ encode: encodePod });
  const pod = cached(1);
  for (const packageless of [false, true]) {
    const frame = cache.frameOf(ALL, pod, WATCH_EVENT_TYPE.ADDED, packageless);
    assert.equal(frame.tail, pod.bytes);
    assert.ok(frame.head.byteLength < 16, `head of ${frame.head.byteLength} bytes`);
  }
  assert.equal(cache.getResponseOf(ALL, pod).tail, pod.bytes);
  const masked = cache.frameOf(MASK, pod, WATCH_EVENT_TYPE.MODIFIED, false);
  assert.equal(masked.tail, cache.bytesOf(MASK, pod), "a masked frame ends with the masked bytes");
});

Deno.test("MaskedBytesCache frames a response once per pod version and mask", () => {
  const cache = new MaskedBytesCache({ encode: encodePod });
  const pod = cached(1);
  const get = cache.getResponseOf(ALL, pod);
  assert.equal(cache.getResponseOf(ALL, pod), get, "the same framed bytes for every request");
  assert.deepEqual(get.bytes.subarray(0, 5), frameMessage(get.message).bytes.subarray(0, 5));
  const masked = cache.frameOf(MASK, pod, WATCH_EVENT_TYPE.MODIFIED, false);
  assert.equal(
    cache.frameOf(MASK, pod, WATCH_EVENT_TYPE.MODIFIED, false),
    masked,
    "a masked frame is shared by every watcher with that mask",
  );
});

Deno.test("MaskedBytesCache keeps one version per pod: a newer version evicts the older's bytes", () => {
  const cache = new MaskedBytesCache({ encode: encodePod });
  const v1 = cached(1, 1);
  cache.bytesOf(MASK, v1);
  cache.frameOf(MASK, v1, WATCH_EVENT_TYPE.ADDED, false);
  const one = cache.size;
  for (let version = 2; version < 200; version++) {
    const pod = cached(1, version);
    cache.bytesOf(MASK, pod);
    cache.frameOf(MASK, pod, WATCH_EVENT_TYPE.MODIFIED, false);
  }
  assert.equal(cache.pods, 1);
  assert.ok(cache.size <= one + 64, `size ${cache.size} after 200 versions (one: ${one})`);
  // A late watcher asking for an older version is answered, without evicting the newer one.
  const latest = cached(1, 199);
  const before = cache.bytesOf(MASK, latest);
  assert.deepEqual(cache.bytesOf(MASK, v1), encodePod(project(MASK, v1.pod)));
  assert.equal(cache.bytesOf(MASK, latest), before);
});

Deno.test("MaskedBytesCache evicts the least recently changed pods at its byte bound", () => {
  const cache = new MaskedBytesCache({ encode: encodePod, maxBytes: 4096 });
  for (let i = 0; i < 100; i++) cache.bytesOf(MASK, cached(i));
  assert.ok(cache.size <= 4096, `size ${cache.size}`);
  assert.ok(cache.pods > 1 && cache.pods < 100, `${cache.pods} pods held`);
  // The newest pods are the ones kept.
  let calls = 0;
  const counting = new MaskedBytesCache({
    encode: (pod) => {
      calls++;
      return encodePod(pod);
    },
    maxBytes: 4096,
  });
  const pods = Array.from({ length: 100 }, (_, i) => cached(i));
  for (const pod of pods) counting.bytesOf(MASK, pod);
  calls = 0;
  counting.bytesOf(MASK, pods[99]!);
  assert.equal(calls, 0, "the newest is held");
  counting.bytesOf(MASK, pods[0]!);
  assert.equal(calls, 1, "the oldest was evicted");
});
