// serveSocket(): the daemon's own socket and the kubelet-path compatibility
// socket, told apart from someone else's socket by device and inode.
import assert from "node:assert/strict";
import { GrpcChannel } from "../../src/grpc/client.ts";
import { GrpcServer } from "../../src/grpc/server.ts";
import { GrpcError, STATUS } from "../../src/grpc/status.ts";
import { createLogger } from "../../src/log.ts";
import { createMetricsRegistry } from "../../src/metrics/registry.ts";
import { serveSocket } from "../../src/server/served_socket.ts";
import { socketPathState, watchSocket } from "../../src/server/socket_watchdog.ts";
import { OwnSockets, socketIdentity } from "../../src/server/unix_socket.ts";
import { startFakeKubeletPodsApi } from "../_support/fake_kubelet_podsapi.ts";
import { metricValue } from "../_support/metric_value.ts";
import { pollUntil } from "../_support/poll.ts";

const PING = "/test.Ping/Ping";

function pingServer(): GrpcServer {
  return new GrpcServer({
    methods: new Map([[PING, {
      kind: "unary",
      handle: () => Promise.resolve(new TextEncoder().encode("pong")),
    }]]),
  });
}

async function ping(path: string): Promise<string> {
  using channel = new GrpcChannel({ transport: "unix", path });
  try {
    return new TextDecoder().decode(await channel.unary(PING, new Uint8Array(0)));
  } catch (err) {
    return err instanceof GrpcError ? `status ${err.code}` : String(err);
  }
}

/** A socket file nobody listens on any more (a crashed server's). */
async function deadSocket(path: string): Promise<void> {
  const listener = Deno.listen({ transport: "unix", path: `${path}.tmp` });
  await Deno.link(`${path}.tmp`, path);
  listener.close();
}

async function rig() {
  const dir = await Deno.makeTempDir({ prefix: "pods-api-served-" });
  const registry = createMetricsRegistry();
  const lines: string[] = [];
  const log = createLogger({ write: (line) => lines.push(line) });
  const server = pingServer();
  return {
    dir,
    registry,
    lines,
    server,
    deps: { log, metrics: registry.metrics },
    async [Symbol.asyncDispose]() {
      await server.close(0);
      await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test("serveSocket() compat: serves the kubelet's path, records it as its own, removes only its own", async () => {
  await using r = await rig();
  const own = new OwnSockets();
  const path = `${r.dir}/kubelet/pods-api.sock`;
  const compat = await serveSocket(r.server, { path, role: "compat", own, checkMs: 10 }, r.deps);
  assert.equal(compat.serving, true);
  assert.equal(await ping(path), "pong");
  assert.equal((await Deno.lstat(path)).mode! & 0o777, 0o660);
  assert.ok(own.has((await socketIdentity(path))!), "recorded as the daemon's own");
  assert.equal(await socketPathState(path, await socketIdentity(path)), "ours");
  assert.equal(await metricValue(r.registry.metrics.compatSocketServing), 1);
  await compat.close();
  await assert.rejects(Deno.lstat(path), Deno.errors.NotFound);
  assert.equal(await metricValue(r.registry.metrics.compatSocketServing), 0);
});

Deno.test("serveSocket() compat: gives the path up once when a kubelet takes it, and never takes it back", async () => {
  await using r = await rig();
  const own = new OwnSockets();
  const path = `${r.dir}/pods-api.sock`;
  const compat = await serveSocket(r.server, { path, role: "compat", own, checkMs: 10 }, r.deps);
  const ours = (await socketIdentity(path))!;
  // The kubelet removes the file and binds its own socket there.
  const kubelet = await startFakeKubeletPodsApi(path);
  try {
    await pollUntil(() => !compat.serving, "the compatibility socket given up");
    const m = r.registry.metrics;
    assert.equal(await metricValue(m.compatSocketYielded), 1);
    assert.equal(await metricValue(m.compatSocketServing), 0);
    assert.equal(own.has(ours), false, "no longer recorded as ours");
    assert.equal(await socketPathState(path, ours), "foreign");
    // The kubelet restarts (its file stays, dead) and serves again: the path stays its.
    await kubelet.kill();
    assert.equal(await socketPathState(path, ours), "foreign");
    await using again = await startFakeKubeletPodsApi(path);
    await again.set([]);
    assert.equal(await metricValue(m.compatSocketYielded), 1, "counted once");
    assert.equal(
      r.lines.filter((l) => l.includes("gave the compatibility socket up")).length,
      1,
      "logged once",
    );
    await compat.close();
    assert.ok((await Deno.lstat(path)).isSocket, "never removed the kubelet's socket");
    assert.equal((await again.stats()).watchers, 0, "the kubelet still answers");
  } finally {
    await kubelet.kill();
  }
});

Deno.test("serveSocket() compat: leaves the path to a server already answering there at start", async () => {
  await using r = await rig();
  const path = `${r.dir}/pods-api.sock`;
  await using kubelet = await startFakeKubeletPodsApi(path);
  const before = await socketIdentity(path);
  const compat = await serveSocket(r.server, { path, role: "compat", checkMs: 10 }, r.deps);
  assert.equal(compat.serving, false);
  assert.deepEqual(await socketIdentity(path), before, "the kubelet's socket untouched");
  assert.equal(await metricValue(r.registry.metrics.compatSocketServing), 0);
  assert.equal(await metricValue(r.registry.metrics.compatSocketYielded), 0);
  assert.ok(r.lines.some((l) => l.includes("serves the kubelet's Pods API path; leaving it")));
  await compat.close();
  assert.deepEqual(await socketIdentity(path), before, "close leaves it too");
  assert.equal((await kubelet.stats()).watches, 0);
});

Deno.test("serveSocket() compat: a stale socket at start is replaced; a directory it cannot make is only logged", async () => {
  await using r = await rig();
  const path = `${r.dir}/pods-api.sock`;
  await deadSocket(path);
  const compat = await serveSocket(r.server, { path, role: "compat", checkMs: 10 }, r.deps);
  assert.equal(compat.serving, true);
  assert.equal(await ping(path), "pong");
  await compat.close();
  await Deno.writeTextFile(`${r.dir}/file`, "x");
  const blocked = await serveSocket(
    r.server,
    { path: `${r.dir}/file/pods-api.sock`, role: "compat" },
    r.deps,
  );
  assert.equal(blocked.serving, false, "not fatal: the daemon serves without it");
  await blocked.close();
});

Deno.test("serveSocket() compat: binds its file again when it goes missing", async () => {
  await using r = await rig();
  const path = `${r.dir}/pods-api.sock`;
  const compat = await serveSocket(r.server, { path, role: "compat", checkMs: 10 }, r.deps);
  await Deno.remove(path);
  await pollUntil(async () => (await ping(path)) === "pong", "bound again");
  assert.equal(compat.serving, true);
  assert.equal(await metricValue(r.registry.metrics.socketProblems, { problem: "recreated" }), 1);
  await compat.close();
});

Deno.test("serveSocket() main: another server's live socket is left alone and reported; a dead one is replaced", async () => {
  await using r = await rig();
  const path = `${r.dir}/pods-api.sock`;
  const main = await serveSocket(r.server, { path, role: "main", checkMs: 10 }, r.deps);
  const problems = r.registry.metrics.socketProblems;
  // Someone else binds a live server there.
  const kubelet = await startFakeKubeletPodsApi(path);
  const theirs = await socketIdentity(path);
  await pollUntil(async () => await metricValue(problems, { problem: "taken" }) === 1, "reported");
  assert.deepEqual(await socketIdentity(path), theirs, "not touched");
  assert.equal(await ping(path), `status ${STATUS.UNIMPLEMENTED}`, "the other server answers");
  // It dies, leaving its file: the daemon takes its home back.
  await kubelet.kill();
  await pollUntil(async () => (await ping(path)) === "pong", "the daemon's socket again");
  assert.equal(main.serving, true);
  await main.close();
  await assert.rejects(Deno.lstat(path), Deno.errors.NotFound);
});

Deno.test("watchSocket() compat: losing the rebind race to a kubelet gives the path up at once", async () => {
  await using r = await rig();
  const path = `${r.dir}/pods-api.sock`;
  let theirs: Deno.Listener | undefined;
  const reasons: string[] = [];
  const stop = new AbortController();
  try {
    await watchSocket({
      path,
      role: "compat",
      checkMs: 5,
      ours: () => ({ dev: 0, ino: 0, born: -1 }),
      // The kubelet binds between the check that saw the path free and the no-clobber link.
      rebind: () => {
        theirs = Deno.listen({ transport: "unix", path });
        return Promise.reject(
          new Error(`Cannot listen on "${path}": another socket took the path`),
        );
      },
      giveUp: (why) => reasons.push(why),
      log: r.deps.log,
      metrics: r.deps.metrics,
      signal: stop.signal,
    });
    assert.deepEqual(reasons, ["the path now holds another server's socket"]);
    assert.ok((await Deno.lstat(path)).isSocket, "the kubelet's socket stays");
  } finally {
    stop.abort();
    theirs?.close();
  }
});

Deno.test("serveSocket() main: an existing directory of sockets only is made 0750, like a new one", async (t) => {
  await using r = await rig();
  for (const made of ["missing", "existing 0755", "existing 0777 with a stale socket"]) {
    await t.step(made, async () => {
      const dir = `${r.dir}/${made.replaceAll(" ", "-")}`;
      if (made !== "missing") {
        await Deno.mkdir(dir);
        await Deno.chmod(dir, made.includes("0777") ? 0o777 : 0o755);
        if (made.includes("stale")) await deadSocket(`${dir}/pods-api.sock`);
      }
      const main = await serveSocket(
        r.server,
        { path: `${dir}/pods-api.sock`, role: "main" },
        r.deps,
      );
      try {
        assert.equal((await Deno.stat(dir)).mode! & 0o777, 0o750);
        assert.equal(await ping(`${dir}/pods-api.sock`), "pong");
      } finally {
        await main.close();
      }
    });
  }
});

Deno.test("serveSocket() leaves a directory that is not only the daemon's as it is", async (t) => {
  await using r = await rig();
  const cases = [
    { name: "main, a directory holding other files", role: "main", file: true },
    { name: "compat, the kubelet's directory", role: "compat", file: false },
  ] as const;
  for (const c of cases) {
    await t.step(c.name, async () => {
      const dir = `${r.dir}/${c.role}`;
      await Deno.mkdir(dir);
      await Deno.chmod(dir, 0o755);
      if (c.file) await Deno.writeTextFile(`${dir}/other.conf`, "x");
      const served = await serveSocket(
        r.server,
        { path: `${dir}/pods-api.sock`, role: c.role },
        r.deps,
      );
      try {
        assert.equal((await Deno.stat(dir)).mode! & 0o777, 0o755);
      } finally {
        await served.close();
      }
    });
  }
});
