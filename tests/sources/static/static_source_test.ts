import assert from "node:assert/strict";
import { createLogger } from "../../../src/log.ts";
import { poll } from "../../_support/poll.ts";
import type { Metrics } from "../../../src/metrics/metrics.ts";
import { createMetricsRegistry } from "../../../src/metrics/registry.ts";
import type { JsonObject } from "../../../src/model/json.ts";
import type { PodSnapshot } from "../../../src/model/pod.ts";
import { SourceUnavailableError } from "../../../src/sources/mod.ts";
import {
  denoFsReader,
  type FsReader,
  StaticPodSource,
  type StaticPodSourceOptions,
} from "../../../src/sources/static/mod.ts";
import { FakeClock } from "../../_fixtures/pods.ts";

const SCHEDULER_YAML = `apiVersion: v1
kind: Pod
metadata:
  creationTimestamp: null
  labels:
    component: kube-scheduler
    tier: control-plane
  name: kube-scheduler
  namespace: kube-system
spec:
  containers:
  - command:
    - kube-scheduler
    - --kubeconfig=/etc/kubernetes/scheduler.conf
    image: registry.k8s.io/kube-scheduler:v1.36.0
    name: kube-scheduler
    resources:
      requests:
        cpu: 100m
  hostNetwork: true
  priority: 2000001000
  priorityClassName: system-node-critical
status: {}
`;

const ETCD_JSON = JSON.stringify({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name: "etcd", namespace: "kube-system" },
  spec: {
    hostNetwork: true,
    containers: [{
      name: "etcd",
      image: "registry.k8s.io/etcd:3.5.21-0",
      resources: { limits: { cpu: "1", memory: "1Gi" } },
    }],
  },
});

function podYaml(name: string, image = "nginx:1.27"): string {
  return `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
spec:
  containers:
  - name: main
    image: ${image}
`;
}

interface Harness {
  source: StaticPodSource;
  clock: FakeClock;
  metrics: Metrics;
  logs: JsonObject[];
  dir: string;
  [Symbol.asyncDispose](): Promise<void>;
}

async function harness(
  files: Record<string, string | Uint8Array> = {},
  options: Partial<StaticPodSourceOptions> = {},
): Promise<Harness> {
  const dir = await Deno.makeTempDir({ prefix: "static-pods-" });
  for (const [name, content] of Object.entries(files)) await write(dir, name, content);
  const clock = new FakeClock(Date.UTC(2026, 2, 1, 10, 0, 0));
  const metrics = createMetricsRegistry().metrics;
  const logs: JsonObject[] = [];
  const log = createLogger({ level: "debug", write: (line) => logs.push(JSON.parse(line)) });
  const source = new StaticPodSource({ dir, nodeName: "Node-1", clock, log, metrics, ...options });
  return {
    source,
    clock,
    metrics,
    logs,
    dir,
    [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }),
  };
}

async function write(dir: string, name: string, content: string | Uint8Array): Promise<void> {
  if (typeof content === "string") await Deno.writeTextFile(`${dir}/${name}`, content);
  else await Deno.writeFile(`${dir}/${name}`, content);
}

function list(source: StaticPodSource): Promise<readonly PodSnapshot[]> {
  return source.list(new AbortController().signal);
}

function names(pods: readonly PodSnapshot[]): string[] {
  return pods.map((p) => `${p.pod.metadata.namespace}/${p.pod.metadata.name}`);
}

async function rejected(metrics: Metrics): Promise<Record<string, number>> {
  const { values } = await metrics.sourceItemsRejected.get();
  const out: Record<string, number> = {};
  for (const v of values) if (v.labels.source === "static") out[String(v.labels.reason)] = v.value;
  return out;
}

Deno.test("StaticPodSource.list() gives manifest pods the kubelet's static pod treatment", async () => {
  await using h = await harness({ "kube-scheduler.yaml": SCHEDULER_YAML, "etcd.json": ETCD_JSON });
  const pods = await list(h.source);
  assert.deepEqual(names(pods), ["kube-system/etcd-node-1", "kube-system/kube-scheduler-node-1"]);
  const scheduler = pods[1]!.pod;
  assert.match(scheduler.metadata.uid, /^[0-9a-f]{32}$/);
  assert.equal(pods[1]!.uid, scheduler.metadata.uid);
  assert.deepEqual(scheduler.metadata.annotations, {
    "kubernetes.io/config.hash": scheduler.metadata.uid,
    "kubernetes.io/config.seen": "2026-03-01T10:00:00.000000000Z",
    "kubernetes.io/config.source": "file",
  });
  assert.equal(
    scheduler.metadata.creationTimestamp,
    undefined,
    "a null creationTimestamp is dropped",
  );
  assert.equal(scheduler.metadata.labels?.component, "kube-scheduler");
  const spec = scheduler.spec!;
  assert.equal(spec.nodeName, "Node-1");
  assert.equal(spec.restartPolicy, "Always");
  assert.equal(spec.priorityClassName, "system-node-critical");
  assert.deepEqual(spec.tolerations, [{ operator: "Exists", effect: "NoExecute" }]);
  const container = (spec.containers as JsonObject[])[0]!;
  assert.equal(container.imagePullPolicy, "IfNotPresent");
  assert.equal(container.terminationMessagePath, "/dev/termination-log");
  const status = scheduler.status!;
  assert.equal(status.phase, "Pending");
  assert.equal(status.qosClass, "Burstable");
  assert.deepEqual((status.containerStatuses as JsonObject[])[0]!.state, {
    waiting: { reason: "ContainerCreating" },
  });
  assert.equal(pods[0]!.pod.status?.qosClass, "Guaranteed");
  assert.equal(pods[0]!.pod.metadata.namespace, "kube-system");
});

Deno.test("StaticPodSource.list() derives a stable UID from content and node name", async () => {
  await using a = await harness({ "s.yaml": SCHEDULER_YAML });
  const [first] = await list(a.source);
  const reformatted = JSON.stringify({
    spec: {
      priorityClassName: "system-node-critical",
      priority: 2000001000,
      hostNetwork: true,
      containers: [{
        name: "kube-scheduler",
        image: "registry.k8s.io/kube-scheduler:v1.36.0",
        resources: { requests: { cpu: "100m" } },
        command: ["kube-scheduler", "--kubeconfig=/etc/kubernetes/scheduler.conf"],
      }],
    },
    status: {},
    metadata: {
      namespace: "kube-system",
      name: "kube-scheduler",
      labels: { tier: "control-plane", component: "kube-scheduler" },
      creationTimestamp: null,
    },
    kind: "Pod",
    apiVersion: "v1",
  });
  await using b = await harness({ "other-name.json": reformatted });
  const [second] = await list(b.source);
  assert.equal(second!.uid, first!.uid, "same content, same node: same UID");
  await using c = await harness({ "s.yaml": SCHEDULER_YAML }, { nodeName: "node-2" });
  const [third] = await list(c.source);
  assert.notEqual(third!.uid, first!.uid, "another node: another UID");
  await using d = await harness({ "s.yaml": SCHEDULER_YAML.replace("100m", "200m") });
  const [fourth] = await list(d.source);
  assert.notEqual(fourth!.uid, first!.uid, "edited content: another UID");
});

Deno.test("StaticPodSource.list() keeps a manifest's own UID", async () => {
  const yaml = podYaml("pinned").replace(
    "  name: pinned",
    "  name: pinned\n  uid: 11111111-2222-3333-4444-555555555555",
  );
  await using h = await harness({ "pinned.yaml": yaml });
  const [pod] = await list(h.source);
  assert.equal(pod!.uid, "11111111-2222-3333-4444-555555555555");
  assert.equal(pod!.pod.metadata.annotations?.["kubernetes.io/config.hash"], pod!.uid);
});

Deno.test("StaticPodSource.list() reads every document of a multi-document file", async () => {
  const multi = `${podYaml("one")}---\n${podYaml("two")}---\n# only a comment\n---\n`;
  await using h = await harness({ "multi.yml": multi });
  const pods = await list(h.source);
  assert.deepEqual(names(pods), ["default/one-node-1", "default/two-node-1"]);
});

Deno.test("StaticPodSource.list() skips broken files and serves the others", async () => {
  const big = podYaml("big") + `# ${"x".repeat(2048)}\n`;
  await using h = await harness({
    "a-good.yaml": podYaml("good"),
    "b-bad.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: [unclosed\n",
    "c-configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
    "d-nocontainers.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: empty\nspec: {}\n",
    "e-dup.yaml": podYaml("good", "nginx:1.28"),
    "f-big.yaml": big,
    "g-binary.json": new Uint8Array([0x7b, 0x00, 0xff, 0xfe]),
    "h-mixed.yaml": `${
      podYaml("mixed-ok")
    }---\nkind: Pod\napiVersion: v1\nmetadata: {name: Bad_Name}\nspec: {containers: [{name: a, image: b}]}\n`,
    ".hidden.yaml": podYaml("hidden"),
    "README.md": "not a manifest",
    "i-inf.yaml": podYaml("inf").replace("spec:", "spec:\n  terminationGracePeriodSeconds: .inf"),
  }, { maxFileBytes: 1024 });
  await Deno.mkdir(`${h.dir}/subdir.yaml`);
  await write(`${h.dir}/subdir.yaml`, "nested.yaml", podYaml("nested"));
  await Deno.symlink(`${h.dir}/loop-b.yaml`, `${h.dir}/loop-a.yaml`);
  await Deno.symlink(`${h.dir}/loop-a.yaml`, `${h.dir}/loop-b.yaml`);

  const pods = await list(h.source);
  assert.deepEqual(names(pods), ["default/good-node-1", "default/mixed-ok-node-1"]);
  const expected = {
    "bad_yaml": 2,
    "not_pod": 1,
    "invalid_pod": 2,
    "duplicate_name": 1,
    "too_large": 1,
    "binary": 1,
    "unreadable": 2,
  };
  assert.deepEqual(await rejected(h.metrics), expected);
  const warned = h.logs.filter((l) => l.msg === "skipping static pod manifest").length;
  assert.equal(warned, 10);

  await relistCountsNothingNew(h, expected, warned);
});

async function relistCountsNothingNew(
  h: Harness,
  expected: Record<string, number>,
  warned: number,
): Promise<void> {
  h.clock.advance(60_000);
  await list(h.source);
  assert.deepEqual(await rejected(h.metrics), expected, "a lasting problem is counted once");
  assert.equal(h.logs.filter((l) => l.msg === "skipping static pod manifest").length, warned);
}

Deno.test("StaticPodSource.list() picks up a file fixed later", async () => {
  await using h = await harness({
    "web.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: web\n",
  });
  assert.deepEqual(await list(h.source), []);
  assert.deepEqual(await rejected(h.metrics), { "bad_yaml": 1 });
  await write(h.dir, "web.yaml", podYaml("web"));
  h.clock.advance(20_000);
  assert.deepEqual(names(await list(h.source)), ["default/web-node-1"]);
  await write(h.dir, "web.yaml", "kind: Service\napiVersion: v1\n");
  assert.deepEqual(await list(h.source), []);
  assert.deepEqual(await rejected(h.metrics), { "bad_yaml": 1, "not_pod": 1 });
});

Deno.test("StaticPodSource.list() returns the same objects for unchanged files", async () => {
  await using h = await harness({
    "a.yaml": podYaml("a"),
    "b.yaml": `${podYaml("b1")}---\n${podYaml("b2")}`,
  });
  const first = await list(h.source);
  h.clock.advance(20_000);
  const second = await list(h.source);
  assert.equal(second, first, "nothing changed: the same array");

  await write(h.dir, "b.yaml", `${podYaml("b1")}---\n${podYaml("b2", "nginx:1.28")}`);
  h.clock.advance(20_000);
  const third = await list(h.source);
  assert.notEqual(third, first);
  assert.equal(third[0], first[0], "another file: same object");
  assert.equal(third[1], first[1], "an unchanged document of an edited file: same object");
  assert.notEqual(third[2], first[2]);
  assert.notEqual(third[2]!.uid, first[2]!.uid);
  assert.equal(
    third[2]!.pod.metadata.annotations?.["kubernetes.io/config.seen"],
    "2026-03-01T10:00:40.000000000Z",
    "a new version of a pod is seen now",
  );
});

Deno.test("StaticPodSource.list() treats a missing directory as empty and logs once", async () => {
  await using h = await harness();
  const missing = `${h.dir}/manifests`;
  const logs: JsonObject[] = [];
  const source = new StaticPodSource({
    dir: missing,
    nodeName: "node-1",
    clock: h.clock,
    log: createLogger({ write: (line) => logs.push(JSON.parse(line)) }),
  });
  assert.deepEqual(await list(source), []);
  assert.deepEqual(await list(source), []);
  assert.equal(logs.filter((l) => String(l.msg).includes("does not exist")).length, 1);
  await Deno.mkdir(missing);
  await write(missing, "web.yaml", podYaml("web"));
  assert.deepEqual(names(await list(source)), ["default/web-node-1"]);
});

Deno.test("StaticPodSource.list() accepts a single manifest file as the path", async () => {
  await using h = await harness({ "only.conf": podYaml("only") });
  const source = new StaticPodSource({
    dir: `${h.dir}/only.conf`,
    nodeName: "node-1",
    clock: h.clock,
    log: createLogger({ write: () => {} }),
  });
  assert.deepEqual(names(await list(source)), ["default/only-node-1"]);
});

Deno.test("StaticPodSource.list() counts unreadable files and fails on an unreadable directory", async () => {
  await using h = await harness({ "a.yaml": podYaml("a"), "b.yaml": podYaml("b") });
  let dirDenied = false;
  const fs: FsReader = {
    readDir: (path) => {
      if (dirDenied) return Promise.reject(new Deno.errors.PermissionDenied("Permission denied"));
      return denoFsReader.readDir(path);
    },
    stat: (path) => denoFsReader.stat(path),
    readFile: (path) =>
      path.endsWith("/b.yaml")
        ? Promise.reject(new Deno.errors.PermissionDenied("Permission denied (os error 13)"))
        : denoFsReader.readFile(path),
  };
  const source = new StaticPodSource({
    dir: h.dir,
    nodeName: "node-1",
    clock: h.clock,
    log: createLogger({ write: () => {} }),
    metrics: h.metrics,
    fs,
  });
  assert.deepEqual(names(await list(source)), ["default/a-node-1"]);
  assert.deepEqual(await rejected(h.metrics), { "unreadable": 1 });
  dirDenied = true;
  await assert.rejects(
    () => list(source),
    (error: unknown) => error instanceof SourceUnavailableError && error.reason === "unreadable",
  );
});

/** A source over `h.dir` reading through `fs` (the real calls where not given), logging into `logs`. */
function sourceOver(h: Harness, fs: Partial<FsReader>, logs: JsonObject[] = []): StaticPodSource {
  return new StaticPodSource({
    dir: h.dir,
    nodeName: "node-1",
    clock: h.clock,
    log: createLogger({ level: "debug", write: (line) => logs.push(JSON.parse(line)) }),
    metrics: h.metrics,
    fs: { ...denoFsReader, ...fs },
  });
}

Deno.test("StaticPodSource.list() leaves out a file removed between the listing and its read, quietly", async (t) => {
  for (const call of ["stat", "readFile"] as const) {
    await t.step(`gone at ${call}`, async () => {
      await using h = await harness({ "a.yaml": podYaml("a"), "b.yaml": podYaml("b") });
      const gone = (path: string) => {
        if (path.endsWith("/b.yaml")) throw new Deno.errors.NotFound("No such file or directory");
      };
      const logs: JsonObject[] = [];
      const source = sourceOver(h, {
        stat: (path) => {
          if (call === "stat") gone(path);
          return denoFsReader.stat(path);
        },
        readFile: (path) => {
          if (call === "readFile") gone(path);
          return denoFsReader.readFile(path);
        },
      }, logs);
      assert.deepEqual(names(await list(source)), ["default/a-node-1"]);
      assert.deepEqual(await rejected(h.metrics), {}, "not counted as a rejected manifest");
      assert.deepEqual(logs.filter((l) => l.level !== "debug"), [], "no warning");
      assert.ok(logs.some((l) => l.file === `${h.dir}/b.yaml`), "a debug line names it");
    });
  }
});

Deno.test("StaticPodSource.list() warns once about a symlink whose target is missing", async () => {
  await using h = await harness({ "a.yaml": podYaml("a") });
  await Deno.symlink(`${h.dir}/nowhere.yaml`, `${h.dir}/b.yaml`);
  assert.deepEqual(names(await list(h.source)), ["default/a-node-1"]);
  assert.deepEqual(names(await list(h.source)), ["default/a-node-1"]);
  const warnings = h.logs.filter((l) => l.level === "warn");
  assert.equal(warnings.length, 1);
  assert.match(String(warnings[0]!.error), /symlink's target does not exist/);
  assert.deepEqual(await rejected(h.metrics), { "unreadable": 1 });
});

Deno.test("StaticPodSource.list() runs concurrent calls one at a time on one state", async () => {
  await using h = await harness({ "a.yaml": podYaml("a") });
  const reads: string[] = [];
  let open = 0;
  let maxOpen = 0;
  const source = sourceOver(h, {
    readFile: async (path) => {
      open++;
      maxOpen = Math.max(maxOpen, open);
      reads.push(path);
      try {
        return await denoFsReader.readFile(path);
      } finally {
        open--;
      }
    },
  });
  const first = list(source);
  h.clock.advance(1000);
  const second = list(source);
  const [a, b] = await Promise.all([first, second]);
  assert.equal(maxOpen, 1);
  assert.equal(reads.length, 2);
  assert.equal(b, a, "the second read reuses what the first committed: same snapshot objects");
});

Deno.test("StaticPodSource.list() abandoned half-way leaves no trace", async () => {
  await using h = await harness({ "a.yaml": podYaml("a"), "b.yaml": "kind: [broken" });
  const controller = new AbortController();
  const logs: JsonObject[] = [];
  const source = sourceOver(h, {
    readFile: (path) => {
      // The relist gives up while the last file is being read.
      if (path.endsWith("/b.yaml")) controller.abort(new Error("given up"));
      return denoFsReader.readFile(path);
    },
  }, logs);
  await assert.rejects(source.list(controller.signal), /given up/);
  assert.deepEqual(logs, [], "the abandoned read reported nothing");
  assert.deepEqual(await rejected(h.metrics), {});
  h.clock.advance(5000);
  const pods = await list(source);
  assert.deepEqual(names(pods), ["default/a-node-1"]);
  assert.equal(
    pods[0]!.pod.metadata.annotations?.["kubernetes.io/config.seen"],
    "2026-03-01T10:00:05.000000000Z",
    "parsed by the read that was kept, not taken over from the abandoned one",
  );
  assert.deepEqual(await rejected(h.metrics), { "bad_yaml": 1 });
});

Deno.test("StaticPodSource.watch() reports file changes until aborted", async () => {
  await using h = await harness();
  const controller = new AbortController();
  let changes = 0;
  let notify: () => void = () => {};
  const changed = new Promise<void>((resolve) => notify = resolve);
  const watching = h.source.watch(controller.signal, () => {
    changes++;
    notify();
  });
  // Write until the watcher (which starts asynchronously) sees a change.
  let i = 0;
  await poll(async () => {
    if (changes > 0) return true;
    await write(h.dir, "web.yaml", podYaml(`web${i++}`));
    return undefined;
  }, { what: "the watcher to see a write" });
  await changed;
  controller.abort();
  await watching;
  assert.ok(changes > 0);
});

Deno.test("StaticPodSource.watch() retries a missing directory on each rescan period", async () => {
  await using h = await harness();
  const source = new StaticPodSource({
    dir: `${h.dir}/absent`,
    nodeName: "node-1",
    clock: h.clock,
    log: createLogger({ write: () => {} }),
    rescanMs: 5000,
  });
  const controller = new AbortController();
  const waits: number[] = [];
  await source.watch(controller.signal, () => {}, {
    sleep: (ms) => {
      waits.push(ms);
      if (waits.length === 3) controller.abort();
      return Promise.resolve();
    },
  });
  assert.deepEqual(waits, [5000, 5000, 5000]);
});

Deno.test("StaticPodSource constructor rejects bad options", () => {
  const base = {
    dir: "/x",
    nodeName: "n",
    clock: new FakeClock(),
    log: createLogger({ write: () => {} }),
  };
  assert.throws(() => new StaticPodSource({ ...base, dir: "" }), TypeError);
  assert.throws(() => new StaticPodSource({ ...base, nodeName: "" }), TypeError);
  assert.throws(() => new StaticPodSource({ ...base, rescanMs: 0 }), RangeError);
});
