// Access (issue 7, item 5): as root, an unprivileged user made for the test
// cannot connect to the API socket with the default permissions; with
// --socket-group naming a group it belongs to, it can. The probe is a tiny
// python3 client (socket.connect) run through setpriv with the user's IDs.
// The metrics endpoint binds to localhost unless told otherwise.
import assert from "node:assert/strict";
import { parseServeConfig } from "../../src/config.ts";
import { FakePodSource } from "../../src/sources/fake/mod.ts";
import { report, startTestDaemon } from "./_support.ts";

const USER = "pods-api-test-user";
const GROUP = "pods-api-test-group";
const IS_ROOT = Deno.uid() === 0;

async function run(cmd: string, args: string[]): Promise<{ code: number; out: string }> {
  const o = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  const dec = new TextDecoder();
  return { code: o.code, out: dec.decode(o.stdout) + dec.decode(o.stderr) };
}

async function ensureUser(): Promise<{ uid: number; gid: number }> {
  if ((await run("getent", ["group", GROUP])).code !== 0) {
    const r = await run("groupadd", ["--system", GROUP]);
    assert.equal(r.code, 0, r.out);
  }
  if ((await run("id", [USER])).code !== 0) {
    const r = await run("useradd", [
      "--system",
      "--no-create-home",
      "--shell",
      "/usr/sbin/nologin",
      "--groups",
      GROUP,
      USER,
    ]);
    assert.equal(r.code, 0, r.out);
  } else {
    const r = await run("usermod", ["--append", "--groups", GROUP, USER]);
    assert.equal(r.code, 0, r.out);
  }
  const uid = Number((await run("id", ["-u", USER])).out.trim());
  const gid = Number((await run("id", ["-g", USER])).out.trim());
  return { uid, gid };
}

const PROBE = [
  "import socket, sys",
  "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)",
  "try:",
  "    s.connect(sys.argv[1])",
  "    print('connected')",
  "except OSError as e:",
  "    print(type(e).__name__, e.errno)",
  "    sys.exit(3)",
].join("\n");

/** Connects to `socket` as the test user; `init` adds its supplementary groups. */
function probe(socket: string, ids: { uid: number; gid: number }, init: boolean) {
  return run("setpriv", [
    `--reuid=${ids.uid}`,
    `--regid=${ids.gid}`,
    init ? "--init-groups" : "--clear-groups",
    "/usr/bin/python3",
    "-c",
    PROBE,
    socket,
  ]);
}

Deno.test({
  name: "the API socket refuses an unprivileged user by default and admits a --socket-group member",
  ignore: !IS_ROOT,
  async fn() {
    const ids = await ensureUser();
    for (
      const c of [
        { flags: [], init: true, want: "PermissionError 13" },
        { flags: ["--socket-group", GROUP], init: false, want: "PermissionError 13" },
        { flags: ["--socket-group", GROUP], init: true, want: "connected" },
      ]
    ) {
      const source = new FakePodSource();
      await using d = await startTestDaemon({ sources: [source], flags: c.flags });
      // Only the socket's own directory and the socket may guard it: the temp
      // parent is opened up, as /var/lib/kubelet is traversable on a node.
      await Deno.chmod(d.dir, 0o755);
      const dirInfo = await Deno.stat(`${d.dir}/api`);
      const sockInfo = await Deno.lstat(d.socket);
      assert.equal(dirInfo.mode! & 0o777, 0o750);
      assert.equal(sockInfo.mode! & 0o777, 0o660);
      assert.equal(sockInfo.uid, 0);
      const r = await probe(d.socket, ids, c.init);
      await report(
        "access",
        `${c.flags.join(" ") || "default flags"}, groups ${
          c.init ? "init" : "cleared"
        }: ${r.out.trim()}`,
      );
      assert.equal(r.out.trim(), c.want, JSON.stringify(c));
    }
  },
});

Deno.test("parseServeConfig() binds the metrics endpoint to localhost by default", async () => {
  const config = parseServeConfig(["--socket", "/tmp/x/pods-api.sock"]);
  assert.equal(config.metricsHost, "127.0.0.1");
  const source = new FakePodSource();
  await using d = await startTestDaemon({ sources: [source] });
  const port = d.daemon.metricsPort;
  const res = await fetch(`http://127.0.0.1:${port}/healthz`);
  await res.body?.cancel();
  assert.equal(res.status, 200);
  // Not reachable on the node's other addresses.
  const others = Deno.networkInterfaces().filter((i) =>
    i.family === "IPv4" && i.address !== "127.0.0.1"
  );
  for (const i of others) {
    await assert.rejects(Deno.connect({ hostname: i.address, port }), `${i.address}:${port}`);
  }
});
