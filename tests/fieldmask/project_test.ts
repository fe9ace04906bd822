import assert from "node:assert/strict";
import { parseFieldMask, parseFieldMaskText, project } from "../../src/fieldmask/mod.ts";
import type { JsonValue } from "../../src/model/json.ts";
import type { PodObject } from "../../src/model/pod.ts";
import { TEST_POD_SCHEMA } from "./_schema.ts";
import { makeFullPod } from "./_pods.ts";

const POD = makeFullPod(7);
const ID = { name: "web-7", namespace: "default", uid: "00000000-0000-0000-0000-000000000007" };

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

Deno.test("project() keeps only the masked fields", async (t) => {
  const cases: { name: string; mask: string; want: JsonValue }[] = [
    {
      name: "a scalar",
      mask: "status.phase",
      want: { metadata: ID, status: { phase: "Running" } },
    },
    { name: "a kept field only", mask: "metadata.uid", want: { metadata: ID } },
    {
      name: "a map",
      mask: "metadata.labels",
      want: { metadata: { ...ID, labels: { app: "web", tier: "frontend" } } },
    },
    { name: "the whole metadata", mask: "metadata", want: { metadata: POD.metadata } },
    {
      name: "a field of every container",
      mask: "spec.containers.name",
      want: { metadata: ID, spec: { containers: [{ name: "app" }, { name: "sidecar" }] } },
    },
    {
      name: "a map in every container, absent stays absent",
      mask: "spec.containers.resources.limits",
      want: {
        metadata: ID,
        spec: {
          containers: [{ resources: { limits: { cpu: "500m", memory: "128Mi" } } }, {
            resources: {},
          }],
        },
      },
    },
    {
      name: "a repeated message whole",
      mask: "status.podIPs",
      want: { metadata: ID, status: { podIPs: [{ ip: "10.1.0.7" }, { ip: "fd00::1" }] } },
    },
    {
      name: "a field of repeated messages",
      mask: "status.podIPs.ip",
      want: { metadata: ID, status: { podIPs: [{ ip: "10.1.0.7" }, { ip: "fd00::1" }] } },
    },
    {
      name: "a deep field of repeated messages",
      mask: "status.containerStatuses.state.running.startedAt",
      want: {
        metadata: ID,
        status: {
          containerStatuses: [{ state: { running: { startedAt: "2026-01-01T00:00:03Z" } } }, {
            state: {},
          }],
        },
      },
    },
    {
      name: "an inline-flattened message",
      mask: "spec.volumes.configMap.name",
      want: { metadata: ID, spec: { volumes: [{ configMap: { name: "web-config" } }, {}] } },
    },
    {
      name: "a repeated scalar",
      mask: "spec.containers.args",
      want: { metadata: ID, spec: { containers: [{ args: ["-g", "daemon off;"] }, {}] } },
    },
    {
      name: "the spec example",
      mask: "metadata.name,metadata.namespace,status.phase,status.podIPs,spec.containers.name",
      want: {
        metadata: ID,
        spec: { containers: [{ name: "app" }, { name: "sidecar" }] },
        status: { phase: "Running", podIPs: [{ ip: "10.1.0.7" }, { ip: "fd00::1" }] },
      },
    },
    {
      name: "overlapping paths",
      mask: "status.phase,status",
      want: { metadata: ID, status: POD.status as JsonValue },
    },
    {
      name: "several fields of one element",
      mask: "status.containerStatuses.name,status.containerStatuses.lastState.terminated.exitCode",
      want: {
        metadata: ID,
        status: {
          containerStatuses: [{ name: "app", lastState: { terminated: { exitCode: 137 } } }, {
            name: "sidecar",
          }],
        },
      },
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      assert.deepEqual(project(parseFieldMaskText(c.mask, TEST_POD_SCHEMA), POD), c.want);
    });
  }
});

Deno.test("project() returns the pod itself for the whole-pod mask", () => {
  assert.equal(project(parseFieldMask([], TEST_POD_SCHEMA), POD), POD);
});

Deno.test("project() does not modify its input and shares whole values", () => {
  const pod = deepFreeze(makeFullPod(1));
  const before = structuredClone(pod);
  const out = project(
    parseFieldMaskText("status.podIPs,spec.containers.name,metadata.labels", TEST_POD_SCHEMA),
    pod,
  );
  assert.deepEqual(pod, before);
  assert.notEqual(out, pod);
  assert.notEqual(out.metadata, pod.metadata);
  assert.equal(out.status?.podIPs, pod.status?.podIPs);
  assert.equal(out.metadata.labels, pod.metadata.labels);
});

Deno.test("project() drops fields outside the schema and orders fields as the schema", () => {
  const out = project(
    parseFieldMaskText("status.phase,metadata.labels,spec.nodeName", TEST_POD_SCHEMA),
    POD,
  );
  assert.deepEqual(Object.keys(out), ["metadata", "spec", "status"]);
  assert.deepEqual(Object.keys(out.metadata), ["name", "namespace", "uid", "labels"]);
  assert.ok(!("apiVersion" in out) && !("kind" in out));
});

Deno.test("project() leaves absent fields absent", async (t) => {
  const bare: PodObject = { metadata: { name: "p", namespace: "ns", uid: "u" } };
  const cases: { name: string; pod: PodObject; mask: string; want: JsonValue }[] = [
    { name: "no status", pod: bare, mask: "status.phase", want: { metadata: bare.metadata } },
    { name: "no status, whole", pod: bare, mask: "status", want: { metadata: bare.metadata } },
    {
      name: "an empty status",
      pod: { ...bare, status: {} },
      mask: "status.podIP",
      want: { metadata: bare.metadata, status: {} },
    },
    {
      name: "no namespace",
      pod: { metadata: { name: "p", uid: "u" } as PodObject["metadata"] },
      mask: "status",
      want: { metadata: { name: "p", uid: "u" } },
    },
    {
      name: "an empty list",
      pod: { ...bare, spec: { containers: [] } },
      mask: "spec.containers.name",
      want: { metadata: bare.metadata, spec: { containers: [] } },
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      assert.deepEqual(project(parseFieldMaskText(c.mask, TEST_POD_SCHEMA), c.pod), c.want);
    });
  }
});

Deno.test("project() tolerates values of the wrong shape", async (t) => {
  const metadata = { name: "p", namespace: "ns", uid: "u" };
  const cases: { name: string; pod: PodObject; mask: string; want: JsonValue }[] = [
    {
      name: "null message kept as null",
      pod: { metadata, status: null as unknown as PodObject["status"] },
      mask: "status.phase",
      want: { metadata, status: null },
    },
    {
      name: "a scalar where a message is expected is dropped",
      pod: {
        metadata,
        spec: { nodeName: "n", restartPolicy: "Always" },
        status: { containerStatuses: "x" },
      },
      mask: "status.containerStatuses.name",
      want: { metadata, status: {} },
    },
    {
      name: "an object where a list is expected is dropped",
      pod: { metadata, spec: { containers: { name: "a" } } },
      mask: "spec.containers.name",
      want: { metadata, spec: {} },
    },
    {
      name: "non-object list elements kept in place",
      pod: { metadata, spec: { containers: [null, 3, { name: "a", image: "i" }] } },
      mask: "spec.containers.name",
      want: { metadata, spec: { containers: [null, 3, { name: "a" }] } },
    },
    {
      name: "a list where a message is expected is dropped",
      pod: { metadata, status: [{ phase: "Running" }] as unknown as PodObject["status"] },
      mask: "status.phase",
      want: { metadata },
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      assert.deepEqual(project(parseFieldMaskText(c.mask, TEST_POD_SCHEMA), c.pod), c.want);
    });
  }
});
