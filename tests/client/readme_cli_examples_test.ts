// The README's CLI examples, as written and each run once, on the demo node
// (`serve --simulate` with the demo's size and seed): each one says what the
// node holds (the pods, columns and fields it asks for, compared with the
// daemon's own ListPods). The install example installs into the test's
// directory (PODS_API_INSTALL_DIR), and the examples run the command it wrote.
// Only the socket path is the test's own. The node does not churn until the
// examples that wait for a change (`--watch-only`), so nothing an example
// picks can be gone by the time the next looks for it.
import assert from "node:assert/strict";
import { parse as parseYaml } from "yaml";
import { PodsClient } from "../../src/client/mod.ts";
import type { PodObject } from "../../src/model/pod.ts";
import { INSTALL_DIR_ENV } from "../../scripts/install.ts";
import { readmeCommands } from "../_support/readme_blocks.ts";
import { tableCells } from "./_cli_output.ts";
import { startSimDaemon } from "./_sim_daemon.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const DECODER = new TextDecoder();

function key(p: PodObject): string {
  return `${p.metadata.namespace}/${p.metadata.name}`;
}

function labels(p: PodObject): Record<string, string> {
  return (p.metadata.labels ?? {}) as Record<string, string>;
}

function status(p: PodObject): { phase?: string; podIP?: string } {
  return (p.status ?? {}) as { phase?: string; podIP?: string };
}

/** Whether a pod's status names the container (`<runtime>://<id>`). */
function holdsContainer(p: PodObject, id: string): boolean {
  return JSON.stringify(p.status ?? {}).includes(`://${id}"`);
}

const POD_COLUMNS = ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE"];

/** The rows of a pod table with {@linkcode POD_COLUMNS}, as `namespace/name`. */
function podRows(out: string): string[] {
  const [header, ...rows] = tableCells(out);
  assert.deepEqual(header, POD_COLUMNS);
  for (const row of rows) {
    assert.match(row[2]!, /^\d+\/\d+$/, row.join(" | "));
    assert.ok(row.length === POD_COLUMNS.length, row.join(" | "));
  }
  return rows.map((r) => `${r[0]}/${r[1]}`).sort();
}

/** What the test knows when it checks one example's output. */
interface Seen {
  readonly out: string;
  readonly err: string;
  /** The pods before the example ran. */
  readonly pods: readonly PodObject[];
  /** ListPods now. */
  live(): Promise<PodObject[]>;
  /** `pods-api ARGS` with the installed command (the test's own look). */
  cli(args: string): Promise<string>;
  readonly bin: string;
}

/** Each example of the README's CLI section, and what its output must say. */
const EXAMPLES: readonly [RegExp, (seen: Seen) => void | Promise<void>][] = [
  [/^npx -y deno@[\d.]+ task install$/, async ({ out, bin }) => {
    assert.match(out, new RegExp(`^installed ${bin}/pods-api: pods-api runs ${ROOT}main\\.ts`));
    assert.doesNotMatch(out, /not on your PATH/);
    assert.equal((await Deno.stat(`${bin}/pods-api`)).mode! & 0o777, 0o755);
  }],
  [/^pods-api list$/, ({ out, pods }) => {
    assert.deepEqual(podRows(out), pods.map(key).sort());
  }],
  [/^pods-api list -n payments -o wide -L app\.kubernetes\.io\/part-of$/, ({ out, pods }) => {
    const [header, ...rows] = tableCells(out);
    assert.deepEqual(header, [
      "NAME",
      "READY",
      "STATUS",
      "RESTARTS",
      "AGE",
      "IP",
      "NODE",
      "NOMINATED NODE",
      "READINESS GATES",
      "PART-OF",
    ]);
    const payments = pods.filter((p) => p.metadata.namespace === "payments");
    assert.deepEqual(rows.map((r) => r[0]).sort(), payments.map((p) => p.metadata.name).sort());
    for (const row of rows) {
      const pod = payments.find((p) => p.metadata.name === row[0])!;
      assert.equal(row[5], status(pod).podIP ?? "<none>", `${row[0]}: IP`);
      assert.equal(row[6], "vm", `${row[0]}: NODE`);
      assert.equal(row[9], labels(pod)["app.kubernetes.io/part-of"], `${row[0]}: PART-OF`);
    }
    assert.ok(rows.some((r) => r[9] === "payments"), "some pods name what they are part of");
  }],
  [/^pods-api list -l .* --field-selector status\.phase=Running$/, ({ out, pods }) => {
    const want = pods.filter((p) =>
      ["checkout-api", "ledger-worker"].includes(labels(p)["app.kubernetes.io/name"] ?? "") &&
      !("canary" in labels(p)) && status(p).phase === "Running"
    );
    assert.ok(want.length > 0);
    assert.deepEqual(podRows(out), want.map(key).sort());
  }],
  [/^pods-api list -o json \| jq -r '\.items\[\]\.metadata\.name'$/, ({ out, pods }) => {
    assert.deepEqual(out.trimEnd().split("\n").sort(), pods.map((p) => p.metadata.name!).sort());
  }],
  [/^pods-api list -o jsonpath=.* --sort-by \.status\.podIP$/, ({ out, pods }) => {
    const lines = out.replace(/\n$/, "").split("\n");
    assert.deepEqual(
      [...lines].sort(),
      pods.map((p) => `${p.metadata.name}\t${status(p).podIP ?? ""}`).sort(),
    );
    const ips = lines.map((l) => l.split("\t")[1]!);
    assert.ok(ips.every((ip, i) => i === 0 || ips[i - 1]! <= ip), `sorted by IP: ${ips}`);
  }],
  [/^pods-api get kube-system\/nginx-proxy-\$\(hostname\)$/, ({ out }) => {
    assert.deepEqual(podRows(out), ["kube-system/nginx-proxy-vm"]);
  }],
  [
    /^pods-api get \$\(pods-api list -n kube-system -l k8s-app=kube-nginx .*\)$/,
    ({ out, pods }) => {
      const nginx = pods.filter((p) => labels(p)["k8s-app"] === "kube-nginx");
      assert.equal(nginx.length, 1);
      assert.deepEqual(podRows(out), [key(nginx[0]!)]);
    },
  ],
  [/^pods-api get --container-id \$\(pods-api ps -q \| head -1 \| cut -c1-12\)$/, async (seen) => {
    const first = (await seen.cli("ps -q")).split("\n")[0]!;
    const holder = seen.pods.filter((p) => holdsContainer(p, first));
    assert.equal(holder.length, 1, `the pod of container ${first}`);
    assert.deepEqual(podRows(seen.out), [key(holder[0]!)]);
  }],
  [/^pods-api get --ip \$\(.*k8s-app=kube-dns.*\) -o yaml$/, ({ out, pods }) => {
    const pod = parseYaml(out) as PodObject & { kind: string };
    assert.equal(pod.kind, "Pod");
    assert.equal(labels(pod)["k8s-app"], "kube-dns");
    const dns = pods.filter((p) => labels(p)["k8s-app"] === "kube-dns");
    assert.ok(dns.some((p) => p.metadata.uid === pod.metadata.uid), "one of the node's DNS pods");
    assert.equal(
      status(pod).podIP,
      status(dns.find((p) => p.metadata.uid === pod.metadata.uid)!).podIP,
    );
  }],
  [
    /^pods-api get --deleted \$\(pods-api watch --watch-only -o json .*\)$/,
    async ({ out, err, live }) => {
      const [row, ...more] = podRows(out);
      assert.ok(row !== undefined && more.length === 0, out);
      assert.match(
        err,
        new RegExp(`^pods-api get: pod ${row} was deleted at \\S+; this is its last state\n$`),
      );
      assert.ok(!(await live()).some((p) => key(p) === row), `${row} is gone from the node`);
    },
  ],
  [/^pods-api watch -n payments$/, ({ out, pods }) => {
    const [header, first] = tableCells(out);
    assert.deepEqual(header, [
      "TIME",
      "EVENT",
      "NAME",
      "READY",
      "STATUS",
      "RESTARTS",
      "AGE",
      "CHANGED",
    ]);
    assert.equal(first![1], "ADDED");
    assert.ok(
      pods.some((p) => p.metadata.namespace === "payments" && p.metadata.name === first![2]),
      first!.join(" | "),
    );
  }],
  [/^pods-api watch --watch-only -o json$/, ({ out }) => {
    // No initial list: the end of the initial sync, then the node's changes.
    const [synced, event] = out.split("\n").slice(0, 2).map((line) =>
      JSON.parse(line) as { type: string; object?: PodObject }
    );
    assert.equal(synced!.type, "INITIAL_SYNC_COMPLETE");
    assert.ok(["ADDED", "MODIFIED", "DELETED"].includes(event!.type), event!.type);
    assert.equal(typeof event!.object?.metadata.uid, "string");
  }],
  [/^pods-api ps -a --state exited$/, ({ out }) => {
    const [header, ...rows] = tableCells(out);
    assert.deepEqual(header, [
      "CONTAINER",
      "IMAGE",
      "CREATED",
      "STATE",
      "NAME",
      "ATTEMPT",
      "POD UID",
      "POD",
      "NAMESPACE",
    ]);
    assert.ok(rows.length > 0, "the demo node has exited containers");
    for (const row of rows) assert.equal(row[3], "Exited", row.join(" | "));
  }],
  [/^source <\(pods-api completion bash\)$/, ({ out }) => {
    // The example, then `complete -p pods-api` in the same shell.
    assert.match(out, /^complete .*pods-api$/m);
  }],
];

Deno.test("every example of the README's CLI section, run once, says what the demo node holds", async () => {
  await using daemon = await startSimDaemon({ pods: 30, churn: 0, seed: 1 });
  using client = new PodsClient({ socket: daemon.socket });
  const live = () => client.listPods();
  const bin = `${daemon.dir}/bin`;
  await Deno.mkdir(bin);
  // The simulated node is named "vm" (the harness's --hostname-override).
  await Deno.writeTextFile(`${daemon.dir}/hostname`, "#!/bin/sh\necho vm\n", { mode: 0o755 });
  const env = {
    PATH: `${bin}:${daemon.dir}:${Deno.env.get("PATH")}`,
    HOME: Deno.env.get("HOME") ?? daemon.dir,
    PODS_API_SOCKET: daemon.socket,
    [INSTALL_DIR_ENV]: bin,
  };
  const shell = (script: string) =>
    new Deno.Command("bash", {
      args: ["-c", `set -o pipefail; ${script}`],
      cwd: ROOT,
      env,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    });
  const cli = async (args: string) => {
    const r = await shell(`pods-api ${args}`).output();
    assert.equal(r.code, 0, DECODER.decode(r.stderr));
    return DECODER.decode(r.stdout);
  };
  const commands = await readmeCommands("The CLI");
  const checked = new Set<RegExp>();
  let churning = false;
  for (const command of commands) {
    if (command.startsWith("export PODS_API_SOCKET=")) continue; // the test's socket instead
    const example = EXAMPLES.find(([pattern]) => pattern.test(command));
    assert.ok(example, `the test knows what this example prints: ${command}`);
    checked.add(example[0]);
    if (command.includes("--watch-only") && !churning) {
      // These wait for a change: from here on the node changes (same seed, same pods).
      await daemon.restart({ pods: 30, churn: 5, seed: 1 });
      churning = true;
    }
    const pods = await live();
    let out: string;
    let err = "";
    if (/^pods-api watch /.test(command)) {
      // A watch runs until stopped: its first lines are enough.
      const child = shell(`exec ${command}`).spawn();
      const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
      out = "";
      while (out.split("\n").length < 3) {
        const { value, done } = await reader.read();
        if (done) break;
        out += value;
      }
      child.kill("SIGINT");
      await reader.cancel();
      err = await new Response(child.stderr).text();
      await child.status;
      assert.ok(out !== "", `${command}: ${err}`);
    } else {
      const script = command.startsWith("source ") ? `${command}; complete -p pods-api` : command;
      const r = await shell(script).output();
      out = DECODER.decode(r.stdout);
      err = DECODER.decode(r.stderr);
      assert.equal(r.code, 0, `${command}\n${err}`);
      // `deno task` names the task it runs on stderr; the command itself prints only its
      // output (a deleted pod's note aside).
      if (/^pods-api (?!get --deleted)/.test(command)) assert.equal(err, "", command);
    }
    await example[1]({ out, err, pods, live, cli, bin });
  }
  assert.equal(checked.size, EXAMPLES.length, "every example the test knows is in the README");
});
