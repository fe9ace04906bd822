import assert from "node:assert/strict";
import { criMessageCodec } from "../../../src/sources/cri/cri_codec.ts";
import {
  CONTAINER_KEY,
  decodeListReusing,
  ListIds,
  POD_SANDBOX_KEY,
} from "../../../src/sources/cri/list_reuse.ts";
import type {
  Container,
  ListContainersResponse,
  ListPodSandboxResponse,
  PodSandbox,
} from "../../../src/sources/cri/_types.ts";
import { Prng } from "../../_support/prng.ts";

const SANDBOX = criMessageCodec<PodSandbox>("PodSandbox");
const CONTAINER = criMessageCodec<Container>("Container");
const SANDBOX_LIST = criMessageCodec<ListPodSandboxResponse>("ListPodSandboxResponse");
const CONTAINER_LIST = criMessageCodec<ListContainersResponse>("ListContainersResponse");

const IDS = ["a1", "b2", "c3", "d4", "e5", "f6"].map((s) => s.repeat(32));

/*
 * A list item's fields other than its key are fixed when it is created: the
 * generators derive them from the ID, and pick only the ID, state and
 * creation time at random.
 */

function randomSandbox(random: Prng): PodSandbox {
  const index = random.int(IDS.length);
  const prng = new Prng(index);
  return {
    id: IDS[index]!,
    state: random.int(2),
    createdAt: 1_700_000_000_000_000_000 + random.int(3) * 1000,
    metadata: {
      name: `pod-${prng.int(9)}`,
      uid: `uid-${prng.int(9)}`,
      namespace: "ns",
      attempt: 0,
    },
    labels: prng.int(2) === 0 ? {} : { app: `a${prng.int(3)}`, tier: "web" },
    annotations: { "kubernetes.io/config.source": prng.pick(["api", "file"]) },
    runtimeHandler: prng.pick(["", "runc"]),
  };
}

function randomContainer(random: Prng): Container {
  const index = random.int(IDS.length);
  const prng = new Prng(index);
  return {
    id: IDS[index]!,
    state: random.int(4),
    createdAt: 1_700_000_000_000_000_000 + random.int(3) * 1000,
    podSandboxId: prng.pick(IDS),
    metadata: { name: prng.pick(["app", "sidecar"]), attempt: prng.int(3) },
    image: { image: "registry.example/app:1", userSpecifiedImage: "" },
    imageRef: "sha256:" + "0".repeat(64),
    labels: { "io.kubernetes.container.name": "app" },
    annotations: prng.int(2) === 0 ? {} : { "io.kubernetes.container.restartCount": "0" },
    imageId: "",
  } as Container;
}

/** What the pod source holds: items by ID, handed back for the same state and creation time. */
class Held<T extends { id: string; state: number; createdAt: number }> {
  readonly byId = new Map<string, T>();
  readonly asked: [string, number, number][] = [];
  readonly reuse = (id: string, state: number, createdAt: number): T | undefined => {
    this.asked.push([id, state, createdAt]);
    const held = this.byId.get(id);
    return held !== undefined && held.state === state && held.createdAt === createdAt
      ? held
      : undefined;
  };
}

Deno.test("decodeListReusing() gives the full decode, held items in place of equal ones", () => {
  for (let seed = 1; seed <= 300; seed++) {
    const prng = new Prng(seed);
    const held = new Held<PodSandbox>();
    // Held: an earlier list's items, decoded in full.
    const earlier = Array.from({ length: prng.int(6) }, () => randomSandbox(prng));
    for (const item of SANDBOX_LIST.decode(SANDBOX_LIST.encode({ items: earlier })).items) {
      held.byId.set(item.id, item);
    }
    const bytes = SANDBOX_LIST.encode({
      items: Array.from({ length: prng.int(8) }, () => randomSandbox(prng)),
    });
    const full = SANDBOX_LIST.decode(bytes).items;
    const items = decodeListReusing(bytes, 1, POD_SANDBOX_KEY, SANDBOX, held.reuse);
    assert.ok(items !== undefined, `seed ${seed}`);
    assert.deepStrictEqual(items, full, `seed ${seed}`);
    assert.deepStrictEqual(held.asked, full.map((i) => [i.id, i.state, i.createdAt]));
    items.forEach((item, i) => {
      const same = held.reuse(full[i]!.id, full[i]!.state, full[i]!.createdAt);
      // Held and equal: the very held object; otherwise a fresh one.
      assert.equal(item === same, same !== undefined, `seed ${seed} item ${i}`);
    });
  }
});

Deno.test("decodeListReusing() with the last answer's IDs gives the same items, right guesses or wrong", () => {
  for (let seed = 1; seed <= 300; seed++) {
    const prng = new Prng(seed);
    const ids = new ListIds();
    const held = new Held<PodSandbox>();
    // Answers in a row: some repeat the last one, some move or change items.
    let items = Array.from({ length: prng.int(8) }, () => randomSandbox(prng));
    for (let answer = 0; answer < 4; answer++) {
      if (prng.int(3) === 0) {
        items = Array.from({ length: prng.int(8) }, () => randomSandbox(prng));
      }
      const bytes = SANDBOX_LIST.encode({ items });
      const full = SANDBOX_LIST.decode(bytes).items;
      const plain = decodeListReusing(bytes, 1, POD_SANDBOX_KEY, SANDBOX, held.reuse);
      const guessed = decodeListReusing(bytes, 1, POD_SANDBOX_KEY, SANDBOX, held.reuse, ids);
      assert.deepStrictEqual(guessed, full, `seed ${seed} answer ${answer}`);
      assert.deepStrictEqual(guessed, plain);
      assert.deepStrictEqual(ids.last, full.map((item) => item.id), "the IDs kept for next time");
      for (const item of full) held.byId.set(item.id, item);
    }
  }
});

Deno.test("decodeListReusing() keeps the last IDs when it gives up on an answer", () => {
  const ids = new ListIds();
  const bytes = SANDBOX_LIST.encode({ items: [randomSandbox(new Prng(1))] });
  decodeListReusing(bytes, 1, POD_SANDBOX_KEY, SANDBOX, () => undefined, ids);
  const kept = ids.last;
  assert.equal(kept.length, 1);
  const broken = bytes.slice(0, bytes.length - 3);
  assert.equal(
    decodeListReusing(broken, 1, POD_SANDBOX_KEY, SANDBOX, () => undefined, ids),
    undefined,
  );
  assert.equal(ids.last, kept);
});

Deno.test("decodeListReusing() reads containers' keys at their own field numbers", () => {
  for (let seed = 1; seed <= 100; seed++) {
    const prng = new Prng(seed);
    const held = new Held<Container>();
    const bytes = CONTAINER_LIST.encode({
      containers: Array.from({ length: 1 + prng.int(6) }, () => randomContainer(prng)),
    });
    const full = CONTAINER_LIST.decode(bytes).containers;
    for (const item of full) held.byId.set(item.id, item);
    const items = decodeListReusing(bytes, 1, CONTAINER_KEY, CONTAINER, held.reuse);
    assert.deepStrictEqual(items, full);
    // An item held under its key is the held one.
    let reused = 0;
    for (const item of items!) {
      const h = held.byId.get(item.id)!;
      if (h.state === item.state && h.createdAt === item.createdAt) {
        assert.equal(item, h);
        reused++;
      }
    }
    assert.ok(reused > 0);
  }
});

/** An item's bytes: the encoded sandbox with extra raw fields appended. */
function sandboxBytes(item: PodSandbox, extra: number[]): number[] {
  return [...SANDBOX.encode(item), ...extra];
}

function listOf(...items: number[][]): Uint8Array {
  const out: number[] = [];
  for (const item of items) {
    out.push(0x0a);
    let n = item.length;
    for (; n >= 0x80; n >>>= 7) out.push((n & 0x7f) | 0x80);
    out.push(n, ...item);
  }
  return new Uint8Array(out);
}

Deno.test("decodeListReusing() takes the last of a repeated key field, as the full decode", () => {
  const item = randomSandbox(new Prng(7));
  item.state = 0;
  // state (field 3, varint) = 1 appended: the last occurrence wins.
  const bytes = listOf(sandboxBytes(item, [0x18, 0x01]));
  const held = new Held<PodSandbox>();
  const items = decodeListReusing(bytes, 1, POD_SANDBOX_KEY, SANDBOX, held.reuse);
  assert.deepStrictEqual(items, SANDBOX_LIST.decode(bytes).items);
  assert.equal(items![0]!.state, 1);
  assert.deepStrictEqual(held.asked, [[item.id, 1, item.createdAt]]);
});

Deno.test("decodeListReusing() decodes in full an item whose key field has another wire type", () => {
  const item = randomSandbox(new Prng(8));
  // created_at (field 4) as a length-delimited field: the full decoder skips it.
  const odd = sandboxBytes(item, [0x22, 0x01, 0x00]);
  const plain = sandboxBytes(randomSandbox(new Prng(9)), []);
  const bytes = listOf(odd, plain);
  const held = new Held<PodSandbox>();
  for (const i of SANDBOX_LIST.decode(bytes).items) held.byId.set(i.id, i);
  const items = decodeListReusing(bytes, 1, POD_SANDBOX_KEY, SANDBOX, held.reuse);
  assert.deepStrictEqual(items, SANDBOX_LIST.decode(bytes).items);
  // Only the plain item was asked for.
  assert.equal(held.asked.length, 1);
});

Deno.test("decodeListReusing() gives up on what it does not expect, never on a partial list", () => {
  const prng = new Prng(11);
  const bytes = SANDBOX_LIST.encode({
    items: Array.from({ length: 5 }, () => randomSandbox(prng)),
  });
  // Nothing held: a corrupted byte outside an item's key would otherwise
  // (rightly) be taken for the held item.
  const held = new Held<PodSandbox>();
  const check = (input: Uint8Array, what: string) => {
    let full: PodSandbox[] | undefined;
    try {
      full = SANDBOX_LIST.decode(input).items;
    } catch {
      full = undefined;
    }
    const items = decodeListReusing(input, 1, POD_SANDBOX_KEY, SANDBOX, held.reuse);
    // Either it gives up (the caller decodes in full), or it agrees with the full decode.
    if (items !== undefined) {
      assert.ok(full !== undefined, `${what}: decoded what the full decoder rejects`);
      assert.deepStrictEqual(items, full, what);
    }
  };
  for (let n = 0; n < bytes.length; n++) check(bytes.subarray(0, n), `truncated at ${n}`);
  for (let i = 0; i < 2000; i++) {
    const corrupt = bytes.slice();
    corrupt[prng.int(corrupt.length)] = prng.int(256);
    check(corrupt, `corruption ${i}`);
  }
  // A top-level field other than the list: left to the full decoder.
  const extra = new Uint8Array([...bytes, 0x10, 0x01]);
  assert.equal(decodeListReusing(extra, 1, POD_SANDBOX_KEY, SANDBOX, held.reuse), undefined);
});
