/**
 * Decoding a relist's CRI answers of a 1000-pod node (one ListPodSandboxResponse
 * and one ListContainersResponse, two containers a pod) into the plain objects
 * the CRI source reads: the codec the daemon uses (`src/sources/cri/cri_codec.ts`,
 * bytes straight into plain objects) against the path it replaced, kept here as
 * the baseline (protobufjs `decode`, then `toObject` with longs and enums as
 * numbers and defaults, through a reader whose strings are flat).
 *
 * Run: `deno bench --frozen --allow-read --allow-env --allow-sys bench/cri_decode_bench.ts`.
 *
 * @module
 */

import protobuf from "protobufjs";
import { FakeClock } from "../src/clock.ts";
import { runBenchPods } from "./_relist_fixture.ts";
import { SimCriRuntime } from "../src/sim/runtime/cri_runtime.ts";
import { CRI_DESCRIPTOR } from "../src/sources/cri/generated/cri_descriptor.ts";
import { criMessageCodec } from "../src/sources/cri/cri_codec.ts";
import type { ListContainersResponse, ListPodSandboxResponse } from "../src/sources/cri/mod.ts";

const PODS = 1000;

const runtime = new SimCriRuntime({ clock: new FakeClock(1_700_000_000_000) });
await runBenchPods(runtime, PODS);

const sandboxCodec = criMessageCodec<ListPodSandboxResponse>("ListPodSandboxResponse");
const containerCodec = criMessageCodec<ListContainersResponse>("ListContainersResponse");
const SANDBOXES = sandboxCodec.encode(await runtime.listPodSandbox({}));
const CONTAINERS = containerCodec.encode(await runtime.listContainers({}));

const LOOSE_UTF8 = new TextDecoder("utf-8", { ignoreBOM: true });

/** The reader the replaced codec used: flat strings through TextDecoder. */
class FlatStringReader extends protobuf.Reader {
  override string(): string {
    const length = this.uint32();
    const start = this.pos;
    const end = start + length;
    if (end > this.len) throw new RangeError(`index out of range: ${start} + ${length}`);
    this.pos = end;
    return length === 0 ? "" : LOOSE_UTF8.decode(this.buf.subarray(start, end));
  }
}

const ROOT = protobuf.Root.fromJSON(CRI_DESCRIPTOR as unknown as protobuf.INamespace);
ROOT.resolveAll();
const OPTIONS: protobuf.IConversionOptions = {
  longs: Number,
  enums: Number,
  defaults: true,
  arrays: true,
  objects: true,
};
const OLD_SANDBOXES = ROOT.lookupType("runtime.v1.ListPodSandboxResponse");
const OLD_CONTAINERS = ROOT.lookupType("runtime.v1.ListContainersResponse");

let sink = 0;

Deno.bench({
  group: `decode a relist of ${PODS} pods`,
  name: "protobufjs decode + toObject (replaced)",
  baseline: true,
  fn() {
    const s = OLD_SANDBOXES.toObject(
      OLD_SANDBOXES.decode(new FlatStringReader(SANDBOXES)),
      OPTIONS,
    );
    const c = OLD_CONTAINERS.toObject(
      OLD_CONTAINERS.decode(new FlatStringReader(CONTAINERS)),
      OPTIONS,
    );
    sink += (s.items as unknown[]).length + (c.containers as unknown[]).length;
  },
});

Deno.bench({
  group: `decode a relist of ${PODS} pods`,
  name: "cri_codec (bytes straight into plain objects)",
  fn() {
    sink += sandboxCodec.decode(SANDBOXES).items.length +
      containerCodec.decode(CONTAINERS).containers.length;
  },
});

Deno.bench({
  group: `encode a relist of ${PODS} pods (simulated runtime)`,
  name: "protobufjs fromObject + encode (replaced)",
  baseline: true,
  async fn(b) {
    const list = await runtime.listContainers({});
    b.start();
    sink += OLD_CONTAINERS.encode(OLD_CONTAINERS.fromObject(list)).finish().length;
    b.end();
  },
});

Deno.bench({
  group: `encode a relist of ${PODS} pods (simulated runtime)`,
  name: "cri_codec",
  async fn(b) {
    const list = await runtime.listContainers({});
    b.start();
    sink += containerCodec.encode(list).length;
    b.end();
  },
});

globalThis.addEventListener("unload", () => {
  if (sink < 0) throw new Error("unreachable");
});
