// The client commands against `serve --simulate` (seed 7, 12 pods, no churn), run as a user runs them.
import assert from "node:assert/strict";
import { lines } from "./_cli_output.ts";
import { runCli, startSimDaemon } from "./_sim_daemon.ts";

const LIST_HEADER =
  "NAMESPACE     NAME                              READY   STATUS              RESTARTS        AGE";

Deno.test("pods-api list, get, ps print kubectl's and crictl's shapes for the simulated node", async (t) => {
  await using daemon = await startSimDaemon({ pods: 12, seed: 7 });
  const s = ["--socket", daemon.socket];
  const json = JSON.parse((await runCli(["list", "-o", "json", ...s])).stdout);
  const byName = new Map<string, { metadata: { uid: string }; status: Record<string, unknown> }>(
    json.items.map((p: { metadata: { name: string } }) => [p.metadata.name, p]),
  );

  await t.step("list: the kubectl table sorted by namespace and name", async () => {
    const r = await runCli(["list", ...s]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, "");
    const out = lines(r.stdout);
    assert.equal(out[0], LIST_HEADER);
    assert.match(
      out[1]!,
      /^default {7}frontend-pg6l4vk5jv-2n4fp {9}1\/1 {5}Running {13}0 {15}\S+$/,
    );
    assert.equal(out.length, 13);
    const keys = out.slice(1).map((l) => l.split(/\s+/).slice(0, 2).join("/"));
    assert.deepEqual(keys, [...keys].sort());
    assert.match(
      r.stdout,
      /\npayments {6}ledger-worker-r949nspsh-gc6w5 {5}0\/1 {5}Error {15}5 \(\S+ ago\) /,
    );
  });

  await t.step("get pods is list; -o wide adds kubectl's wide columns", async () => {
    const r = await runCli(["get", "pods", "-o", "wide", ...s]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(
      lines(r.stdout)[0],
      "NAMESPACE     NAME                              READY   STATUS              RESTARTS        AGE    IP            NODE   NOMINATED NODE   READINESS GATES",
    );
    assert.match(lines(r.stdout)[1]!, / 10\.244\.44\.4 {3}vm {5}<none> {11}<none>$/);
  });

  await t.step("list -o json and -o yaml print a v1 List of Pods", async () => {
    assert.equal(json.kind, "List");
    assert.equal(json.apiVersion, "v1");
    assert.equal(json.items.length, 12);
    assert.equal(json.items[0].kind, "Pod");
    assert.equal(json.items[0].apiVersion, "v1");
    assert.equal(json.items[0].metadata.name, "frontend-pg6l4vk5jv-2n4fp");
    const yaml = await runCli(["list", "-n", "logging", "-o", "yaml", ...s]);
    assert.deepEqual(lines(yaml.stdout).slice(0, 4), [
      "apiVersion: v1",
      "items:",
      "  - apiVersion: v1",
      "    kind: Pod",
    ]);
    const one = JSON.parse((await runCli(["list", "-n", "logging", "-o", "json", ...s])).stdout);
    assert.equal(one.kind, "List");
    assert.equal(one.items.length, 1);
  });

  await t.step("-o name, -o jsonpath, --no-headers, --sort-by", async () => {
    assert.equal(
      lines((await runCli(["list", "-o", "name", ...s])).stdout)[0],
      "pod/frontend-pg6l4vk5jv-2n4fp",
    );
    const jp = await runCli([
      "list",
      "-n",
      "payments",
      "-o",
      'jsonpath={range .items[*]}{.metadata.name}{"\\t"}{.status.podIP}{"\\n"}{end}',
      ...s,
    ]);
    assert.deepEqual(lines(jp.stdout), [
      "checkout-api-pqfh67fcg6-2pbhk\t10.244.44.2",
      "ledger-worker-r949nspsh-cr9th\t10.244.44.5",
      "ledger-worker-r949nspsh-gc6w5\t10.244.44.9",
    ]);
    const noHeaders = await runCli(["list", "--no-headers", "-n", "monitoring", ...s]);
    assert.match(
      noHeaders.stdout,
      /^node-exporter-mtj2k {3}1\/1 {3}Running {3}3 \(\S+ ago\) {3}11d\n$/,
    );
    const sorted = await runCli([
      "list",
      "--sort-by",
      ".status.podIP",
      "-o",
      "name",
      "-n",
      "default",
      ...s,
    ]);
    assert.deepEqual(lines(sorted.stdout), [
      "pod/frontend-pg6l4vk5jv-7b4sb",
      "pod/frontend-pg6l4vk5jv-2n4fp",
      "pod/frontend-pg6l4vk5jv-srnlh",
      "pod/report-generator-g2cms-2kcmt",
    ]);
  });

  await t.step(
    "-n leaves out NAMESPACE; -l and --field-selector filter; --show-labels and -L add columns",
    async () => {
      const r = await runCli([
        "list",
        "-n",
        "default",
        "-l",
        "app=frontend,tier in (web)",
        "-L",
        "tier",
        ...s,
      ]);
      assert.equal(r.code, 0, r.stderr);
      const out = lines(r.stdout);
      assert.equal(out[0], "NAME                        READY   STATUS    RESTARTS   AGE    TIER");
      assert.equal(out.length, 4);
      assert.match(out[1]!, /^frontend-pg6l4vk5jv-2n4fp .* web$/);
      const f = await runCli([
        "list",
        "--field-selector",
        "status.phase!=Running,metadata.namespace=payments",
        "-o",
        "name",
        ...s,
      ]);
      assert.deepEqual(lines(f.stdout), []);
      const pending = await runCli([
        "list",
        "--field-selector",
        "status.phase=Pending",
        "-o",
        "name",
        ...s,
      ]);
      assert.deepEqual(lines(pending.stdout), ["pod/fluent-bit-px9rd"]);
      const labels = await runCli(["list", "-n", "logging", "--show-labels", ...s]);
      assert.match(
        lines(labels.stdout)[1]!,
        / app\.kubernetes\.io\/instance=fluent-bit,app\.kubernetes\.io\/name=fluent-bit,controller-revision-hash=vjk22tngm,pod-template-generation=1$/,
      );
    },
  );

  await t.step("an empty result says No resources found, exit 0", async () => {
    const r = await runCli(["list", "-n", "nothere", ...s]);
    assert.equal(r.code, 0);
    assert.equal(r.stdout, "");
    assert.equal(r.stderr, "No resources found in nothere namespace.\n");
    const all = await runCli(["list", "-l", "app=nothing", ...s]);
    assert.equal(all.stderr, "No resources found\n");
    const emptyJson = JSON.parse(
      (await runCli(["list", "-l", "app=nothing", "-o", "json", ...s])).stdout,
    );
    assert.deepEqual(emptyJson, {
      apiVersion: "v1",
      items: [],
      kind: "List",
      // The daemon's resume token, as the HTTP API's List carries it.
      metadata: { resourceVersion: emptyJson.metadata.resourceVersion },
    });
    assert.match(emptyJson.metadata.resourceVersion, /^[0-9a-z]+\.\d+$/);
  });

  await t.step(
    "with --fields, columns the mask removed show -, never a made-up value",
    async () => {
      const r = await runCli(["list", "--fields", "status.phase", "-n", "payments", ...s]);
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(lines(r.stdout).slice(0, 2), [
        "NAME                            READY   STATUS    RESTARTS   AGE",
        "checkout-api-pqfh67fcg6-2pbhk   -       Running   -          -",
      ]);
      const wide = await runCli([
        "list",
        "--fields",
        "status.podIPs",
        "-o",
        "wide",
        "-n",
        "payments",
        ...s,
      ]);
      assert.match(
        lines(wide.stdout)[1]!,
        /^checkout-api-pqfh67fcg6-2pbhk {3}- {7}- {8}- {10}- {5}10\.244\.44\.2 {3}- {6}- {16}-$/,
      );
    },
  );

  await t.step(
    "get by UID, NS/NAME, -n NS NAME, container ID and IP finds the same pod",
    async () => {
      const pod = byName.get("ledger-worker-r949nspsh-cr9th")!;
      const status = pod.status as { containerStatuses: Array<{ containerID: string }> };
      const containerId = status.containerStatuses[0]!.containerID;
      // --simulate presents its containers as the simulated runtime's, not containerd's.
      assert.match(containerId, /^pods-api-simulated:\/\/[0-9a-f]{64}$/);
      const bare = containerId.replace("pods-api-simulated://", "");
      const ways = [
        [pod.metadata.uid],
        ["payments/ledger-worker-r949nspsh-cr9th"],
        ["-n", "payments", "ledger-worker-r949nspsh-cr9th"],
        ["ledger-worker-r949nspsh-cr9th"],
        ["pod", "payments/ledger-worker-r949nspsh-cr9th"],
        ["--container-id", containerId],
        ["--container-id", bare],
        ["--container-id", bare.slice(0, 12)],
        ["--ip", "10.244.44.5"],
      ];
      for (const way of ways) {
        const r = await runCli(["get", ...way, "-o", "jsonpath={.metadata.uid}", ...s]);
        assert.equal(r.code, 0, `${way.join(" ")}: ${r.stderr}`);
        assert.equal(r.stdout.trim(), pod.metadata.uid, way.join(" "));
      }
      const table = await runCli(["get", "-n", "payments", "ledger-worker-r949nspsh-cr9th", ...s]);
      assert.deepEqual(lines(table.stdout).map((l) => l.split(/\s+/).slice(0, 4).join(" ")), [
        "NAME READY STATUS RESTARTS",
        "ledger-worker-r949nspsh-cr9th 1/1 Running 0",
      ]);
      const one = JSON.parse((await runCli(["get", pod.metadata.uid, "-o", "json", ...s])).stdout);
      assert.equal(one.kind, "Pod");
      assert.equal(one.apiVersion, "v1");
    },
  );

  await t.step(
    "get says what it could not find, exit 1; ambiguous or short keys are usage errors",
    async () => {
      const cases: Array<[string[], number, string]> = [
        [
          ["payments/nope"],
          1,
          'pods-api get: Not found: pod with name "payments/nope" not found',
        ],
        [
          ["00000000-0000-0000-0000-000000000000"],
          1,
          'pods-api get: Not found: pod with UID "00000000-0000-0000-0000-000000000000" not found',
        ],
        [["--ip", "10.0.0.10"], 1, 'pods-api get: Not found: pod with IP "10.0.0.10" not found'],
        [
          ["--container-id", "8d2e"],
          2,
          'pods-api get: flag --container-id: "8d2e" is too short; give the full ID or at least 12 characters',
        ],
        [
          ["--container-id", "ffffffffffffff"],
          1,
          'pods-api get: Not found: pod with container ID "ffffffffffffff" not found',
        ],
      ];
      for (const [args, code, line] of cases) {
        const r = await runCli(["get", ...args, ...s]);
        assert.equal(r.code, code, r.stderr);
        assert.deepEqual(lines(r.stderr), [line]);
      }
    },
  );

  await t.step(
    "ps: crictl's columns, running containers unless -a, --state, --pod, --name, -q",
    async () => {
      const r = await runCli(["ps", ...s]);
      assert.equal(r.code, 0, r.stderr);
      const out = lines(r.stdout);
      assert.equal(
        out[0],
        "CONTAINER       IMAGE                                                  CREATED             STATE     NAME             ATTEMPT   POD UID         POD                               NAMESPACE",
      );
      assert.match(
        out[1]!,
        /^8d2ed1f261828 {3}docker\.io\/library\/nginx:1\.27\.2 {25}.* ago +Running {3}nginx {12}0 {9}985df0d0-3847 {3}frontend-pg6l4vk5jv-2n4fp {9}default$/,
      );
      assert.equal(out.length, 12);
      assert.equal(lines((await runCli(["ps", "-a", ...s])).stdout).length, 15);
      const exited = await runCli(["ps", "--state", "exited", "-q", ...s]);
      assert.equal(lines(exited.stdout).length, 2);
      for (const id of lines(exited.stdout)) {
        assert.match(
          id,
          /^(89e4be290e605|8ed31ba953555)[0-9a-f]{51}$/,
        );
      }
      const pod = await runCli([
        "ps",
        "-a",
        "--pod",
        "payments/checkout-api-pqfh67fcg6-2pbhk",
        "--name",
        "^(app|envoy)$",
        ...s,
      ]);
      assert.deepEqual(lines(pod.stdout).slice(1).map((l) => l.split(/\s+/)[0]), [
        "b1faa098b60a4",
        "2a6bb786b859f",
      ]);
    },
  );

  await t.step("completion bash|zsh prints a script naming every subcommand", async () => {
    for (const shell of ["bash", "zsh"]) {
      const r = await runCli(["completion", shell]);
      assert.equal(r.code, 0);
      assert.match(r.stdout, /complete -F _pods_api pods-api/);
      assert.match(
        r.stdout,
        /serve list get watch ps devices whois completion version kubeconfig help/,
      );
    }
  });
});
