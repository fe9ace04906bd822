/**
 * Regression tests for the encoder's fast paths (own writer, time and
 * quantity caches): they must give the bytes the general paths give.
 */

import assert from "node:assert/strict";
import type { PodObject } from "../../src/model/pod.ts";
import { decodePod, encodePod, InvalidQuantityError } from "../../src/proto/mod.ts";

function pod(extra: { metadata?: Record<string, unknown>; spec?: Record<string, unknown> }) {
  return {
    metadata: { uid: "u1", name: "web", namespace: "default", ...extra.metadata },
    ...(extra.spec === undefined ? {} : { spec: extra.spec }),
  } as unknown as PodObject;
}

Deno.test("encodePod() reads a UTC time and its offset form as the same instant", () => {
  const utc = encodePod(pod({ metadata: { creationTimestamp: "2024-02-29T23:59:59Z" } }));
  const offset = encodePod(pod({ metadata: { creationTimestamp: "2024-03-01T01:29:59+01:30" } }));
  assert.deepEqual(utc, offset);
  assert.equal(decodePod(utc).metadata.creationTimestamp, "2024-02-29T23:59:59Z");
});

Deno.test("encodePod() leaves out impossible dates, cached or not", () => {
  const bare = encodePod(pod({}));
  for (let i = 0; i < 2; i++) {
    assert.deepEqual(
      encodePod(pod({ metadata: { creationTimestamp: "2023-02-29T00:00:00Z" } })),
      bare,
    );
    assert.deepEqual(
      encodePod(pod({ metadata: { creationTimestamp: "2023-01-01T24:00:00Z" } })),
      bare,
    );
    assert.deepEqual(
      encodePod(pod({ metadata: { creationTimestamp: "2023-01-01T0a:00:00Z" } })),
      bare,
    );
  }
});

Deno.test("encodePod() keeps years below 100 exact", () => {
  const bytes = encodePod(pod({ metadata: { creationTimestamp: "0099-12-31T00:00:00Z" } }));
  assert.equal(decodePod(bytes).metadata.creationTimestamp, "0099-12-31T00:00:00Z");
});

Deno.test("encodePod() rejects an invalid quantity every time it sees it", () => {
  const bad = pod({
    spec: { containers: [{ name: "a", resources: { limits: { cpu: "1x" } } }] },
  });
  for (let i = 0; i < 2; i++) assert.throws(() => encodePod(bad), InvalidQuantityError);
  const good = pod({
    spec: { containers: [{ name: "a", resources: { limits: { cpu: " 100m " } } }] },
  });
  const decoded = decodePod(encodePod(good)) as unknown as {
    spec: { containers: Array<{ resources: { limits: { cpu: string } } }> };
  };
  assert.equal(decoded.spec.containers[0]!.resources.limits.cpu, "100m");
});

Deno.test("encodePod() writes non-ASCII and long strings as UTF-8", () => {
  for (const name of ["ünïcødé-😀", "é".repeat(200), "a".repeat(300), "ascii-then-ü"]) {
    const bytes = encodePod(pod({ metadata: { labels: { k: name } } }));
    assert.equal(decodePod(bytes).metadata.labels?.k, name);
  }
});

Deno.test("encodePod() recovers after an error in the middle of a pod", () => {
  const bad = pod({ spec: { containers: [{ name: "a", resources: { limits: { cpu: "?" } } }] } });
  const good = pod({ metadata: { labels: { app: "web" } } });
  const before = encodePod(good);
  assert.throws(() => encodePod(bad), InvalidQuantityError);
  assert.deepEqual(encodePod(good), before);
});

Deno.test("encodePod() writes negative and 64-bit integers as protobuf varints", () => {
  const bytes = encodePod(pod({
    spec: {
      containers: [{ name: "a" }],
      priority: -5,
      activeDeadlineSeconds: 2 ** 40 + 3,
      terminationGracePeriodSeconds: -(2 ** 40),
    },
  }));
  const spec = decodePod(bytes).spec as Record<string, unknown>;
  assert.equal(spec.priority, -5);
  assert.equal(spec.activeDeadlineSeconds, 2 ** 40 + 3);
  assert.equal(spec.terminationGracePeriodSeconds, -(2 ** 40));
});
