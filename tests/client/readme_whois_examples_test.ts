// The README's "Which pod is this process?" examples on the demo node
// (`serve --simulate`, whose simulated containers have processes of their
// own): each CLI example run with the values of one running container of the
// node in place of the README's numbers and path (a node's PIDs and inodes
// are its own), and the library example run as written but for its socket.
// Each answer must name the pod and container that hold the process.
import assert from "node:assert/strict";
import { parse as parseYaml } from "yaml";
import { PodQueryClient, PodsClient } from "../../src/client/mod.ts";
import { readmeCommands } from "../_support/readme_blocks.ts";
import { startSimDaemon } from "./_sim_daemon.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const HEADING = "Which pod is this process?";
const DECODER = new TextDecoder();

/** The README's TypeScript block under the heading. */
async function readmeTypeScript(): Promise<string> {
  const text = await Deno.readTextFile(new URL("../../README.md", import.meta.url));
  const section = text.slice(text.indexOf(`### ${HEADING}`));
  const m = /```ts\n([\s\S]*?)```/.exec(section);
  assert.ok(m, "a TypeScript example");
  return m[1]!;
}

interface Owner {
  kind: string;
  container: { name: string; containerId: string; cgroupId: number; initPid: number };
  pod: {
    metadata: { uid: string; name: string; namespace: string; labels?: object };
    status?: object;
  };
}

Deno.test("every example of the README's whois section names the pod and container of the process", async () => {
  await using daemon = await startSimDaemon({ pods: 30, churn: 0, seed: 1 });
  using client = new PodsClient({ socket: daemon.socket });
  const query = new PodQueryClient(client);
  // A running container of the node: the first simulated PID that is one.
  let found: Awaited<ReturnType<PodQueryClient["get"]>> | undefined;
  for (let pid = 100_000; found === undefined && pid < 100_200; pid++) {
    found = await query.get({ kind: "pid", pid }).catch(() => undefined);
  }
  assert.ok(found?.container, "a running simulated container");
  const c = found.container;
  const pod = found.pod.metadata;
  const values: Record<string, string> = {
    pid: String(c.initPid),
    "cgroup-id": String(c.cgroupId),
    cgroup: `/sys/fs/cgroup${c.cgroupPath}`,
    mntns: String(c.mntnsInode),
  };
  const run = async (command: string) => {
    const r = await new Deno.Command("bash", {
      args: [
        "-c",
        command.replace(/^pods-api /, `${Deno.execPath()} run --frozen -A ${ROOT}main.ts `),
      ],
      env: { PODS_API_SOCKET: daemon.socket },
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(r.code, 0, `${command}: ${DECODER.decode(r.stderr)}`);
    return DECODER.decode(r.stdout);
  };
  const ownerOf = (out: Owner) => {
    assert.equal(out.kind, "ProcessOwner");
    assert.equal(out.pod.metadata.uid, pod.uid);
    assert.equal(out.container.containerId, c.containerId);
    assert.equal(out.container.name, c.name);
  };
  const checks: [RegExp, string, (out: string) => void][] = [
    [/^pods-api whois (\d+)$/, "pid", (out) => {
      const [header, row] = out.trimEnd().split("\n").map((l) => l.trim().split(/\s{2,}/));
      assert.deepEqual(header, [
        "NAMESPACE",
        "POD",
        "CONTAINER",
        "CONTAINER ID",
        "KIND",
        "CGROUP ID",
      ]);
      assert.deepEqual(row, [
        pod.namespace,
        pod.name,
        c.name,
        c.containerId,
        c.init ? "init" : "container",
        String(c.cgroupId),
      ]);
    }],
    [/^pods-api whois --cgroup-id (\d+) -o json$/, "cgroup-id", (out) => {
      ownerOf(JSON.parse(out));
    }],
    [/^pods-api whois --cgroup (\S+)$/, "cgroup", (out) => {
      assert.match(out, new RegExp(`^${pod.namespace}\\s+${pod.name}\\s+${c.name}\\s`, "m"));
    }],
    [/^pods-api whois --mntns (\d+) --fields metadata\.labels -o yaml$/, "mntns", (out) => {
      const owner = parseYaml(out) as Owner;
      ownerOf(owner);
      assert.ok(owner.pod.metadata.labels, "the labels asked for");
      assert.equal(owner.pod.status, undefined, "and nothing else");
    }],
  ];
  const commands = await readmeCommands(HEADING);
  assert.equal(commands.length, checks.length, commands.join("\n"));
  for (const command of commands) {
    const check = checks.find(([pattern]) => pattern.test(command));
    assert.ok(check, `the test knows what this example prints: ${command}`);
    const [pattern, value, expect] = check;
    const written = pattern.exec(command)![1]!;
    expect(await run(command.replace(written, values[value]!)));
  }

  // The library example, with the test's socket.
  const source = (await readmeTypeScript())
    .replace('"@pods-api/pods-api/client"', JSON.stringify(`${ROOT}src/client/mod.ts`))
    .replace('"/run/pods-api/pods-api.sock"', JSON.stringify(daemon.socket));
  const file = `${daemon.dir}/agent.ts`;
  await Deno.writeTextFile(file, source);
  const agent = await import(`file://${file}`) as {
    podOfEvent(cgroupId: number): Promise<string>;
  };
  assert.equal(
    await agent.podOfEvent(c.cgroupId),
    `${pod.namespace}/${pod.name} ${c.name} ${c.containerId}`,
  );
});
