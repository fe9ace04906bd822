/**
 * encodePod() cost per pod and per 1000 pods (the 5.6 KB full fixture and
 * the simulated node's ~2 KB pods), against JSON serialization of the same
 * pods as the baseline (what a JSON API would pay).
 *
 * @module
 */

import type { PodObject } from "../src/model/pod.ts";
import { decodePod, encodeListPodsResponse, encodePod } from "../src/proto/mod.ts";
import { SimulatedNode } from "../src/sim/mod.ts";
import { systemClock } from "../src/clock.ts";

const FULL_POD = JSON.parse(
  await Deno.readTextFile(new URL("../tests/_fixtures/full_pod.json", import.meta.url)),
) as PodObject;

const PODS_1K: PodObject[] = Array.from({ length: 1000 }, (_, i) => {
  const pod = structuredClone(FULL_POD);
  pod.metadata.uid = `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`;
  pod.metadata.name = `web-${i}`;
  return pod;
});

/** The simulated node's pods (what the load benchmark serves): about 2 KB each. */
const SIM_PODS = new SimulatedNode({
  clock: { ...systemClock, now: () => 1_767_225_600_000 },
  pods: 1000,
  seed: 1,
})
  .pods();

const FULL_POD_BYTES = encodePod(FULL_POD);
const PODS_1K_BYTES = PODS_1K.map(encodePod);
const TEXT_ENCODER = new TextEncoder();

Deno.bench({
  group: "encode full pod",
  name: "JSON.stringify + UTF-8",
  baseline: true,
  fn() {
    TEXT_ENCODER.encode(JSON.stringify(FULL_POD));
  },
});

Deno.bench({
  group: "encode full pod",
  name: "encodePod()",
  fn() {
    encodePod(FULL_POD);
  },
});

Deno.bench({
  group: "encode 1000 simulated pods",
  name: "JSON.stringify + UTF-8",
  baseline: true,
  fn() {
    for (const pod of SIM_PODS) TEXT_ENCODER.encode(JSON.stringify(pod));
  },
});

Deno.bench({
  group: "encode 1000 simulated pods",
  name: "encodePod()",
  fn() {
    for (const pod of SIM_PODS) encodePod(pod);
  },
});

Deno.bench({
  group: "decode full pod",
  name: "JSON.parse",
  baseline: true,
  fn() {
    JSON.parse(JSON.stringify(FULL_POD));
  },
});

Deno.bench({
  group: "decode full pod",
  name: "decodePod()",
  fn() {
    decodePod(FULL_POD_BYTES);
  },
});

Deno.bench({
  group: "encode 1000 pods",
  name: "JSON.stringify + UTF-8 of 1000 pods",
  baseline: true,
  fn() {
    for (const pod of PODS_1K) TEXT_ENCODER.encode(JSON.stringify(pod));
  },
});

Deno.bench({
  group: "encode 1000 pods",
  name: "encodePod() of 1000 pods",
  fn() {
    for (const pod of PODS_1K) encodePod(pod);
  },
});

Deno.bench({
  group: "encode 1000 pods",
  name: "encodeListPodsResponse() of 1000 pre-encoded pods",
  fn() {
    encodeListPodsResponse(PODS_1K_BYTES);
  },
});
