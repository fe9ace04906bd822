/**
 * The pieces of the relist churn tests (issue 17): a manifest directory
 * churned a few ms apart with every action counted as it is issued, a source
 * wrapper whose reads sometimes answer only after their timeout, and a watch
 * that checks each event as it arrives.
 *
 * @module
 */

import type * as grpc from "@grpc/grpc-js";
import type { Buffer } from "node:buffer";
import type { PodObject, PodSnapshot } from "../../src/model/pod.ts";
import type { PolledSource } from "../../src/sources/mod.ts";
import { decodePod } from "../../src/proto/mod.ts";
import { callUnary, type PodsStub } from "./daemon_harness.ts";
import { poll, pollUntil } from "./poll.ts";
import type { Prng } from "./prng.ts";
import { compareWithList, type PodCauses, type WatchSequenceChecker } from "./watch_sequence.ts";

/** Real-time pacing of a test's own actions (never an assertion). */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * `source`, except that the reads numbered in `late` (1 is the first) hold
 * their answer until their relist has given up on them (their signal
 * aborted), then answer anyway: the stale view a late source hands back.
 *
 * @param source The source.
 * @param late The numbers of the reads that answer late.
 * @returns The wrapper; `late` counts the late answers given.
 */
export function answersLate(
  source: PolledSource,
  late: ReadonlySet<number>,
): PolledSource & { late: number } {
  let calls = 0;
  const wrapped = {
    kind: source.kind,
    late: 0,
    async list(signal: AbortSignal): Promise<readonly PodSnapshot[]> {
      const view = await source.list(signal);
      if (!late.has(++calls)) return view;
      await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
      wrapped.late++;
      return view;
    },
    ...(source.periodMs === undefined ? {} : { periodMs: source.periodMs }),
    ...(source.watchChanges ? { watchChanges: source.watchChanges.bind(source) } : {}),
  };
  return wrapped;
}

/**
 * Static pod manifests written and removed in a manifest directory, each
 * action counted before it is issued, so a watcher can tell an event that
 * came before its cause.
 */
export class ManifestChurn {
  /** The namespace of every manifest's pod. */
  static readonly NAMESPACE = "churn";
  readonly #dir: string;
  readonly #nodeName: string;
  readonly #written = new Map<string, number>();
  readonly #unlinked = new Map<string, number>();

  /**
   * @param dir The manifest directory (`--pod-manifest-path`).
   * @param nodeName The node name the static pod names end with.
   */
  constructor(dir: string, nodeName: string) {
    this.#dir = dir;
    this.#nodeName = nodeName;
  }

  /** @returns Whether the pod is one of these manifests'. */
  owns(pod: PodObject): boolean {
    return pod.metadata.namespace === ManifestChurn.NAMESPACE;
  }

  /** @returns How many times the pod's manifest was written. */
  created(pod: PodObject): number {
    return this.#written.get(this.#fileOf(pod)) ?? 0;
  }

  /** @returns How many times the pod's manifest was removed. */
  removed(pod: PodObject): number {
    return this.#unlinked.get(this.#fileOf(pod)) ?? 0;
  }

  /** @returns The `namespace/name` of every static pod whose manifest is there now. */
  expected(): Set<string> {
    const out = new Set<string>();
    for (const [file, n] of this.#written) {
      if (n > (this.#unlinked.get(file) ?? 0)) {
        out.add(`${ManifestChurn.NAMESPACE}/${file}-${this.#nodeName}`);
      }
    }
    return out;
  }

  /**
   * Writes manifest `i` as kubeadm and editors do: aside under a hidden name
   * (not read), then renamed in.
   */
  async write(i: number): Promise<void> {
    const file = `s-${i}`;
    this.#written.set(file, (this.#written.get(file) ?? 0) + 1);
    const manifest = JSON.stringify({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: file, namespace: ManifestChurn.NAMESPACE },
      spec: { containers: [{ name: "main", image: `registry.example/s:${i}` }] },
    });
    await Deno.writeTextFile(`${this.#dir}/.${file}.tmp`, manifest);
    await Deno.rename(`${this.#dir}/.${file}.tmp`, `${this.#dir}/${file}.json`);
  }

  /** Removes manifest `i`. */
  async unlink(i: number): Promise<void> {
    const file = `s-${i}`;
    this.#unlinked.set(file, (this.#unlinked.get(file) ?? 0) + 1);
    await Deno.remove(`${this.#dir}/${file}.json`);
  }

  /**
   * The churn: `count` manifests written 0-3 ms apart; three quarters removed
   * in a random order 0-3 ms apart; 40 of those written again with the same
   * content (same UID: a new lifetime), and half of them removed again.
   *
   * @param count How many manifests.
   * @param prng Order and pacing.
   * @param options `removed`: awaited after the removals, before any file
   *   comes back (so that a comeback is a new lifetime to the daemon).
   */
  async run(
    count: number,
    prng: Prng,
    options: { removed?: () => Promise<void> } = {},
  ): Promise<void> {
    for (let i = 0; i < count; i++) {
      await this.write(i);
      await pause(prng.int(4));
    }
    const order = Array.from({ length: count }, (_, i) => i)
      .sort(() => prng.next() - 0.5)
      .slice(0, Math.floor((count * 3) / 4));
    for (const i of order) {
      await this.unlink(i);
      await pause(prng.int(4));
    }
    await options.removed?.();
    const back = order.slice(0, 40);
    for (const i of back) {
      await this.write(i);
      await pause(prng.int(3));
    }
    for (const i of back.slice(0, 20)) {
      await this.unlink(i);
      await pause(prng.int(3));
    }
  }

  #fileOf(pod: PodObject): string {
    return pod.metadata.name.slice(0, -`-${this.#nodeName}`.length);
  }
}

/**
 * The causes of a churn run: a manifest's pod exists as often as its file
 * was written and goes as often as it was removed; a runtime pod (any other)
 * exists once and goes when the test issued its removal.
 *
 * @param manifests The manifest churn.
 * @param removedUids UIDs of the runtime pods whose removal was issued.
 * @returns The causes for {@linkcode WatchSequenceChecker}; manifests' pods are immutable.
 */
export function churnCauses(manifests: ManifestChurn, removedUids: ReadonlySet<string>): PodCauses {
  return {
    created: (pod) => manifests.owns(pod) ? manifests.created(pod) : 1,
    removed: (pod) =>
      manifests.owns(pod) ? manifests.removed(pod) : +removedUids.has(pod.metadata.uid),
    // Nothing edits a manifest in place: its pod never changes.
    immutable: (pod) => manifests.owns(pod),
  };
}

/**
 * Waits until every source has synced (the gate opened).
 *
 * @param gate The daemon's gate.
 * @throws {Error} When it stays closed for 30 s (a bound on a hang).
 */
export function waitGateOpen(gate: { readonly isOpen: boolean }): Promise<void> {
  return pollUntil(() => gate.isOpen, "every source synced");
}

/**
 * Opens a `v1alpha1.Pods/WatchPods` whose every event goes through `checker`
 * the moment it arrives.
 *
 * @param stub A v1alpha1 client.
 * @param checker The checker.
 * @returns Cancel, and the final status code.
 */
export function checkedWatch(
  stub: PodsStub,
  checker: WatchSequenceChecker,
): { cancel(): void; ended: Promise<number> } {
  const call = (stub.WatchPods as (req: unknown) => grpc.ClientReadableStream<unknown>)
    .call(stub, {});
  const ended = new Promise<number>((resolve) => {
    call.on("error", (err: grpc.ServiceError) => resolve(err.code));
    call.on("status", (s: grpc.StatusObject) => resolve(s.code));
  });
  call.on("data", (m: { type: string; pod?: Buffer }) => checker.observe(m.type, m.pod));
  return { cancel: () => call.cancel(), ended };
}

/**
 * Waits until ListPods holds exactly `expected` (by `keyOf`) and the
 * checked stream's live pods are ListPods' byte for byte.
 *
 * @param stub A v1alpha1 client.
 * @param checker The stream's checker.
 * @param expected The keys of the pods that should be left.
 * @param keyOf A listed pod's key.
 * @param options `timeoutMs`: a bound on a hang, not a measure. @default {30000}
 * @returns The final ListPods answer.
 * @throws {Error} When it does not converge in time.
 */
export async function waitConverged(
  stub: PodsStub,
  checker: WatchSequenceChecker,
  expected: ReadonlySet<string>,
  keyOf: (pod: PodObject) => string,
  options: { timeoutMs?: number } = {},
): Promise<Buffer[]> {
  return await poll(async () => {
    const list = await callUnary<{ pods: Buffer[] }>(stub, "ListPods", {});
    if (!list.ok) throw new Error(`ListPods failed: ${list.code} ${list.details}`);
    const keys = new Set(list.value.pods.map((bytes) => keyOf(decodePod(bytes))));
    const same = keys.size === expected.size && [...expected].every((k) => keys.has(k)) &&
      compareWithList(checker.live(), list.value.pods).length === 0;
    return same ? list.value.pods : undefined;
  }, {
    what: "ListPods to hold what is left and the stream to agree with it",
    timeoutMs: options.timeoutMs ?? 30_000,
    intervalMs: 50,
  });
}
