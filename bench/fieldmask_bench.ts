/**
 * Field mask costs: projecting 1000 pods through masks of 1, 3 and 20 paths
 * (baseline: no mask), compiling a mask, and a cache hit.
 */

import {
  FieldMaskCache,
  parseFieldMask,
  parseFieldMaskText,
  project,
} from "../src/fieldmask/mod.ts";
import { decodeFieldMaskBinary, encodeFieldMaskBinary } from "../src/proto/field_mask_bin.ts";
import { TEST_POD_SCHEMA } from "../tests/fieldmask/_schema.ts";
import { makeFullPod } from "../tests/fieldmask/_pods.ts";

const PODS = Array.from({ length: 1000 }, (_, i) => makeFullPod(i));

const PATHS_1 = ["status.phase"];
const PATHS_3 = ["status.phase", "status.podIPs", "spec.containers.name"];
const PATHS_20 = [
  "metadata.labels",
  "metadata.annotations",
  "metadata.ownerReferences.uid",
  "metadata.creationTimestamp",
  "spec.nodeName",
  "spec.restartPolicy",
  "spec.containers.name",
  "spec.containers.image",
  "spec.containers.ports",
  "spec.containers.resources.limits",
  "spec.containers.env.name",
  "spec.volumes.name",
  "spec.volumes.configMap.name",
  "status.phase",
  "status.podIP",
  "status.podIPs.ip",
  "status.conditions.type",
  "status.conditions.status",
  "status.containerStatuses.state.running.startedAt",
  "status.containerStatuses.restartCount",
];

const MASK_ALL = parseFieldMask([], TEST_POD_SCHEMA);
const MASK_1 = parseFieldMask(PATHS_1, TEST_POD_SCHEMA);
const MASK_3 = parseFieldMask(PATHS_3, TEST_POD_SCHEMA);
const MASK_20 = parseFieldMask(PATHS_20, TEST_POD_SCHEMA);

const TEXT_20 = PATHS_20.join(",");
const BINARY_20 = encodeFieldMaskBinary(PATHS_20);
const CACHE = new FieldMaskCache(TEST_POD_SCHEMA);
CACHE.parseText(TEXT_20);

Deno.bench({
  group: "project 1000 pods",
  name: "no mask",
  baseline: true,
  fn() {
    for (const pod of PODS) project(MASK_ALL, pod);
  },
});
Deno.bench({
  group: "project 1000 pods",
  name: "1 path",
  fn() {
    for (const pod of PODS) project(MASK_1, pod);
  },
});
Deno.bench({
  group: "project 1000 pods",
  name: "3 paths",
  fn() {
    for (const pod of PODS) project(MASK_3, pod);
  },
});
Deno.bench({
  group: "project 1000 pods",
  name: "20 paths",
  fn() {
    for (const pod of PODS) project(MASK_20, pod);
  },
});

Deno.bench({
  group: "compile a 20-path mask",
  name: "cache hit",
  baseline: true,
  fn() {
    CACHE.parseText(TEXT_20);
  },
});
Deno.bench({
  group: "compile a 20-path mask",
  name: "parse text",
  fn() {
    parseFieldMaskText(TEXT_20, TEST_POD_SCHEMA);
  },
});
Deno.bench({
  group: "compile a 20-path mask",
  name: "decode binary and parse",
  fn() {
    parseFieldMask(decodeFieldMaskBinary(BINARY_20), TEST_POD_SCHEMA);
  },
});
