import { deepStrictEqual, equal, notDeepStrictEqual, ok, throws } from "node:assert/strict";
import type { JsonObject, JsonValue } from "../../src/model/json.ts";
import type { PodObject } from "../../src/model/pod.ts";
import { PEERS, requirePeer } from "../_support/peers.ts";
import {
  decodePod,
  encodePod,
  InvalidQuantityError,
  unrepresentablePaths,
} from "../../src/proto/mod.ts";

const FIXTURE = new URL("../_fixtures/full_pod.json", import.meta.url);
const PROTO_DIR = new URL("../../proto/", import.meta.url).pathname;
const PY_DECODER = new URL("./_protoc_decode.py", import.meta.url).pathname;
const PYTHON = "/usr/bin/python3";

async function loadFullPod(): Promise<PodObject> {
  return JSON.parse(await Deno.readTextFile(FIXTURE)) as PodObject;
}

function minimalPod(extra: JsonObject = {}): PodObject {
  return { metadata: { uid: "u-1", name: "p", namespace: "ns" }, ...extra };
}

const PROTOC_AND_PYTHON = requirePeer(PEERS.protoc, PEERS.pythonProtobuf);
const PROTOC = requirePeer(PEERS.protoc);

async function run(cmd: string, args: string[], stdin?: Uint8Array): Promise<Uint8Array> {
  const child = new Deno.Command(cmd, {
    args,
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (stdin !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(stdin);
    await writer.close();
  }
  const out = await child.output();
  if (!out.success) {
    throw new Error(`Command "${cmd}" failed: ${new TextDecoder().decode(out.stderr)}`);
  }
  return out.stdout;
}

/** Compiles the schema with protoc into a descriptor set in a temp dir. */
async function withDescriptorSet(fn: (path: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "pods_api_proto_" });
  try {
    const path = `${dir}/pod.pb`;
    await run("protoc", [
      "-I",
      PROTO_DIR,
      "--include_imports",
      `--descriptor_set_out=${path}`,
      "k8s.io/api/core/v1/generated.proto",
    ]);
    await fn(path);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Rebuilds every object with its keys in a different (reversed, rotated) order. */
function shuffleKeys(value: JsonValue): JsonValue {
  if (Array.isArray(value)) return value.map(shuffleKeys);
  if (value === null || typeof value !== "object") return value;
  const keys = Object.keys(value).reverse();
  if (keys.length > 2) keys.push(keys.shift()!);
  const out: JsonObject = {};
  for (const key of keys) out[key] = shuffleKeys(value[key]!);
  return out;
}

function toHex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

Deno.test("encodePod() and decodePod() round-trip the full pod", async () => {
  const pod = await loadFullPod();
  deepStrictEqual(unrepresentablePaths(pod), []);
  deepStrictEqual(decodePod(encodePod(pod)), pod);
});

Deno.test({
  name: PROTOC_AND_PYTHON.name(
    "encodePod() bytes decode with the protobuf runtime to the same pod",
  ),
  ignore: PROTOC_AND_PYTHON.ignore,
  async fn() {
    PROTOC_AND_PYTHON.check();
    const pod = await loadFullPod();
    await withDescriptorSet(async (descriptorSet) => {
      const out = await run(PYTHON, [PY_DECODER, descriptorSet], encodePod(pod));
      deepStrictEqual(JSON.parse(new TextDecoder().decode(out)), pod);
    });
  },
});

Deno.test({
  name: PROTOC_AND_PYTHON.name(
    "encodePod() bytes equal the protobuf runtime's deterministic serialization",
  ),
  ignore: PROTOC_AND_PYTHON.ignore,
  async fn() {
    PROTOC_AND_PYTHON.check();
    const bytes = encodePod(await loadFullPod());
    await withDescriptorSet(async (descriptorSet) => {
      const out = await run(PYTHON, [PY_DECODER, descriptorSet, "--reserialize"], bytes);
      equal(new TextDecoder().decode(out), toHex(bytes));
    });
  },
});

Deno.test({
  name: PROTOC.name("encodePod() bytes show the Kubernetes field values in protoc --decode"),
  ignore: PROTOC.ignore,
  async fn() {
    PROTOC.check();
    const bytes = encodePod(await loadFullPod());
    const text = new TextDecoder().decode(
      await run("protoc", [
        "--decode=k8s.io.api.core.v1.Pod",
        "-I",
        PROTO_DIR,
        "k8s.io/api/core/v1/generated.proto",
      ], bytes),
    );
    const expected = [
      'uid: "5f1c2a9e-3b7d-4e8a-9c61-2d4f7a8b9c01"',
      // creationTimestamp 2024-05-01T10:00:00Z, seconds only.
      "creationTimestamp {\n    seconds: 1714557600\n  }",
      // Volume.volumeSource and ConfigMapVolumeSource.localObjectReference are inline in JSON.
      'volumeSource {\n      configMap {\n        localObjectReference {\n          name: "web-config"',
      'sizeLimit {\n          string: "256Mi"',
      // Probe.handler; IntOrString by name and by number.
      'handler {\n        httpGet {\n          path: "/healthz"\n          port {\n            type: 1\n            strVal: "http"',
      "tcpSocket {\n          port {\n            type: 0\n            intVal: 8080",
      'ephemeralContainerCommon {\n      name: "debugger-x7k2"',
      'restartPolicy: "Always"',
      "supplementalGroups: 4000\n    supplementalGroups: 5000",
      'phase: "Running"',
      'qosClass: "Burstable"',
      "exitCode: 137",
    ];
    for (const snippet of expected) ok(text.includes(snippet), `missing ${snippet}`);
    // Map entries come sorted by key.
    const labels = [...text.matchAll(/labels \{\n\s+key: "([^"]+)"/g)].map((m) => m[1]);
    deepStrictEqual(labels.slice(0, 4), [
      "app.kubernetes.io/name",
      "app.kubernetes.io/part-of",
      "pod-template-hash",
      "tier",
    ]);
  },
});

Deno.test("encodePod() gives the same bytes whatever the key order", async () => {
  const pod = await loadFullPod();
  const shuffled = shuffleKeys(pod) as PodObject;
  notDeepStrictEqual(Object.keys(shuffled.spec!), Object.keys(pod.spec!));
  deepStrictEqual(encodePod(shuffled), encodePod(pod));
  deepStrictEqual(encodePod(pod), encodePod(pod));
});

Deno.test("encodePod() writes map entries sorted by key", () => {
  const a = minimalPod();
  a.metadata.labels = { zeta: "1", alpha: "2", "m/x": "3", "\u{1F600}": "4", "\uFF5E": "5" };
  const b = minimalPod();
  b.metadata.labels = { "\uFF5E": "5", "m/x": "3", "\u{1F600}": "4", alpha: "2", zeta: "1" };
  deepStrictEqual(encodePod(a), encodePod(b));
  const decoded = decodePod(encodePod(a));
  // UTF-8 byte order, as Go: U+FF5E (EF BD 9E) sorts before U+1F600 (F0 9F 98 80).
  deepStrictEqual(Object.keys(decoded.metadata.labels!), [
    "alpha",
    "m/x",
    "zeta",
    "\uFF5E",
    "\u{1F600}",
  ]);
});

Deno.test("encodePod() converts Kubernetes JSON scalars", async (t) => {
  const cases: { name: string; input: JsonObject; expected: JsonObject }[] = [
    {
      name: "Time with an offset and a fraction becomes UTC seconds",
      input: { creationTimestamp: "2024-05-01T12:00:00.75+02:00" },
      expected: { creationTimestamp: "2024-05-01T10:00:00Z" },
    },
    {
      name: "Time before the epoch",
      input: { creationTimestamp: "1969-12-31T23:59:59Z" },
      expected: { creationTimestamp: "1969-12-31T23:59:59Z" },
    },
    {
      name: "int64 as a JSON number",
      input: { generation: 9007199254740991, deletionGracePeriodSeconds: -1 },
      expected: { generation: 9007199254740991, deletionGracePeriodSeconds: -1 },
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const pod = minimalPod();
      Object.assign(pod.metadata, c.input);
      const back = decodePod(encodePod(pod));
      deepStrictEqual(back.metadata, { ...minimalPod().metadata, ...c.expected });
    });
  }
  await t.step("quantity as a JSON number or with spaces becomes its text", () => {
    const pod = minimalPod({ spec: { overhead: { cpu: 0.5, memory: " 64Mi " } } });
    deepStrictEqual(decodePod(encodePod(pod)).spec, { overhead: { cpu: "0.5", memory: "64Mi" } });
  });
  await t.step("negative int32 round-trips", () => {
    const pod = minimalPod({
      status: { containerStatuses: [{ name: "c", state: { terminated: { exitCode: -1 } } }] },
    });
    deepStrictEqual(decodePod(encodePod(pod)), pod);
  });
});

Deno.test("encodePod() rejects an invalid quantity with its path", async (t) => {
  const invalid = ["", "abc", "1x", "1K", "1e", "1.5.5", "Mi", "--1", "1 Gi", "1e99999999999"];
  for (const quantity of invalid) {
    await t.step(`"${quantity}"`, () => {
      const pod = minimalPod({
        spec: { containers: [{ name: "c", resources: { limits: { cpu: quantity } } }] },
      });
      const path = 'spec.containers[0].resources.limits["cpu"]';
      throws(() => encodePod(pod), (error: unknown) => {
        ok(error instanceof InvalidQuantityError);
        ok(error instanceof RangeError);
        equal(error.path, path);
        equal(error.message, `Cannot encode pod "ns/p": invalid quantity "${quantity}" at ${path}`);
        return true;
      });
      deepStrictEqual(unrepresentablePaths(pod), [path]);
    });
  }
  const valid = [
    "0",
    "1",
    "100m",
    "1.5",
    ".5",
    "1.",
    "+1",
    "-1",
    "1Ki",
    "1Ei",
    "1e3",
    "1E-3",
    "1e+3",
    "5E",
    "12n",
    "3u",
    "2k",
    "2M",
    "2G",
    "2T",
    "2P",
  ];
  for (const quantity of valid) {
    await t.step(`accepts "${quantity}"`, () => {
      const pod = minimalPod({ spec: { overhead: { cpu: quantity } } });
      deepStrictEqual(decodePod(encodePod(pod)), pod);
    });
  }
});

Deno.test("unrepresentablePaths() reports what the schema cannot carry", () => {
  const pod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      uid: "u",
      name: "n",
      namespace: "d",
      labels: { ok: "x", bad: 5 },
      creationTimestamp: "yesterday",
      deletionTimestamp: null,
    },
    spec: {
      bogus: true,
      nodeName: 7,
      containers: [
        { name: "c", ports: [{ containerPort: 1.5 }], livenessProbe: { httpGet: { port: 3.5 } } },
        "not-a-container",
        null,
      ],
      volumes: [{ name: "v", configMap: { name: "cm", weird: 1 } }],
      tolerations: { key: "x" },
      "odd key": 1,
    },
    status: "Running",
  } as unknown as PodObject;
  deepStrictEqual(
    unrepresentablePaths(pod).sort(),
    [
      'metadata.labels["bad"]',
      "metadata.creationTimestamp",
      'spec["odd key"]',
      "spec.bogus",
      "spec.containers[0].livenessProbe.httpGet.port",
      "spec.containers[0].ports[0].containerPort",
      "spec.containers[1]",
      "spec.containers[2]",
      "spec.nodeName",
      "spec.tolerations",
      "spec.volumes[0].configMap.weird",
      "status",
    ].sort(),
  );
  // The rest is encoded; what was reported is left out.
  deepStrictEqual(decodePod(encodePod(pod)), {
    metadata: { uid: "u", name: "n", namespace: "d", labels: { ok: "x" } },
    spec: {
      containers: [{ name: "c", ports: [{}], livenessProbe: { httpGet: {} } }],
      volumes: [{ name: "v", configMap: { name: "cm" } }],
    },
  });
});

Deno.test("unrepresentablePaths() reports a TypeMeta other than v1 Pod", () => {
  const pod = { ...minimalPod(), apiVersion: "v2", kind: "Pod" } as PodObject;
  deepStrictEqual(unrepresentablePaths(pod), ["apiVersion"]);
});

Deno.test("decodePod() rejects malformed bytes with a TypeError", async (t) => {
  const bytes = encodePod(await loadFullPod());
  const cases: { name: string; input: Uint8Array }[] = [
    { name: "truncated", input: bytes.subarray(0, bytes.length - 3) },
    { name: "length past the end", input: Uint8Array.of(0x0a, 0x05, 0x0a, 0x01) },
    { name: "wrong wire type for metadata", input: Uint8Array.of(0x08, 0x01) },
    { name: "field number 0", input: Uint8Array.of(0x0a, 0x02, 0x00, 0x00) },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      throws(() => decodePod(c.input), TypeError);
    });
  }
});

Deno.test("decodePod() skips unknown fields and accepts packed repeated ints", () => {
  // Pod{ 99: varint 1, spec{ securityContext{ supplementalGroups packed [1, 2] } } }
  const input = Uint8Array.of(
    0x98,
    0x06,
    0x01,
    0x12,
    0x06,
    0x72,
    0x04,
    0x22,
    0x02,
    0x01,
    0x02,
  );
  deepStrictEqual(decodePod(input), { spec: { securityContext: { supplementalGroups: [1, 2] } } });
});

Deno.test("decodePod() rejects an invalid quantity on the wire", () => {
  // Pod{ spec{ overhead{ key "cpu", value Quantity{ string "x" } } } }
  const entry = [0x0a, 0x03, 0x63, 0x70, 0x75, 0x12, 0x03, 0x0a, 0x01, 0x78];
  const spec = [0x82, 0x02, entry.length, ...entry];
  const input = Uint8Array.of(0x12, spec.length, ...spec);
  throws(() => decodePod(input), RangeError);
});

Deno.test("encodePod() always writes the required EphemeralContainerCommon", () => {
  const pod = minimalPod({ spec: { ephemeralContainers: [{ targetContainerName: "web" }] } });
  const bytes = encodePod(pod);
  // ...ephemeralContainers(34) { ephemeralContainerCommon(1) {} targetContainerName(2) "web" }
  ok(toHex(bytes).includes("9202070a001203776562"));
  deepStrictEqual(decodePod(bytes), pod);
});
