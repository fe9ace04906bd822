import assert from "node:assert/strict";
import type { PodObject } from "../../../src/model/pod.ts";
import { FakePodSource } from "../../../src/sources/fake/fake_source.ts";
import { SourceUnavailableError } from "../../../src/sources/mod.ts";

function pod(uid: string, name = `pod-${uid}`): PodObject {
  return { metadata: { uid, name, namespace: "default" }, status: { phase: "Running" } };
}

function signal(): AbortSignal {
  return new AbortController().signal;
}

Deno.test("FakePodSource.list() reports the pods last set", async () => {
  const a = pod("a");
  const b = pod("b");
  const source = new FakePodSource({ pods: [a] });
  assert.equal(source.kind, "fake");
  assert.deepEqual((await source.list(signal())).map((s) => s.uid), ["a"]);
  source.set([a, b]);
  const list = await source.list(signal());
  assert.deepEqual(list.map((s) => s.uid), ["a", "b"]);
  assert.equal(list[1]!.pod, b);
  assert.ok(Object.isFrozen(list));
});

Deno.test("FakePodSource.set() reuses the snapshot of an unchanged pod", async () => {
  const a = pod("a");
  const source = new FakePodSource({ pods: [a, pod("b")] });
  const first = await source.list(signal());
  source.set([a, pod("b")]);
  const second = await source.list(signal());
  assert.equal(second[0], first[0]);
  assert.notEqual(second[1], first[1]);
});

Deno.test("FakePodSource.set() rejects a pod without UID", () => {
  const source = new FakePodSource();
  assert.throws(() => source.set([pod("")]), TypeError);
});

Deno.test("FakePodSource.setSnapshots() passes entries through unchecked", async () => {
  const source = new FakePodSource();
  const dup = { uid: "x", pod: pod("x") };
  source.setSnapshots([dup, dup]);
  assert.equal((await source.list(signal())).length, 2);
});

Deno.test("FakePodSource.failNext() fails the next reads, then recovers", async () => {
  const source = new FakePodSource({ pods: [pod("a")] });
  const custom = new Error("boom");
  source.failNext();
  source.failNext(custom);
  await assert.rejects(source.list(signal()), (err: unknown) => {
    assert.ok(err instanceof SourceUnavailableError);
    assert.equal(err.reason, "injected");
    return true;
  });
  await assert.rejects(source.list(signal()), (err: unknown) => err === custom);
  assert.equal((await source.list(signal())).length, 1);
  assert.equal(source.listCalls, 3);
});

Deno.test("FakePodSource.hangNext() waits until the signal aborts", async () => {
  const source = new FakePodSource({ pods: [pod("a")] });
  source.hangNext();
  const controller = new AbortController();
  let settled = false;
  const pending = source.list(controller.signal).finally(() => settled = true);
  await Promise.resolve();
  await Promise.resolve();
  assert.equal(settled, false);
  const reason = new Error("deadline");
  controller.abort(reason);
  await assert.rejects(pending, (err: unknown) => err === reason);
  assert.equal((await source.list(signal())).length, 1);
});

Deno.test("FakePodSource.list() rejects at once when the signal is already aborted", async () => {
  const source = new FakePodSource({ pods: [pod("a")] });
  const controller = new AbortController();
  controller.abort(new Error("gone"));
  await assert.rejects(source.list(controller.signal), /gone/);
});
