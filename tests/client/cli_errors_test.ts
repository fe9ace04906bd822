// Every error of a client command, as a user meets it: one line that says what to do, exit 1.
import assert from "node:assert/strict";
import { lines } from "./_cli_output.ts";
import { runCli, startSimDaemon } from "./_sim_daemon.ts";
import { pollUntil } from "../_support/poll.ts";

Deno.test("pods-api list says there is no socket and how to name one", async () => {
  const r = await runCli(["list", "--socket", "/nonexistent/pods-api.sock"]);
  assert.equal(r.code, 1);
  assert.equal(r.stdout, "");
  assert.deepEqual(lines(r.stderr), [
    "pods-api list: No daemon socket at /nonexistent/pods-api.sock: start the daemon (pods-api serve), or name its socket with --socket or PODS_API_SOCKET",
  ]);
});

Deno.test("pods-api list says the daemon is not running when its socket outlived it", async () => {
  await using daemon = await startSimDaemon();
  await daemon.kill("SIGKILL");
  const r = await runCli(["list", "--socket", daemon.socket]);
  assert.equal(r.code, 1);
  assert.deepEqual(lines(r.stderr), [
    `pods-api list: The daemon is not running: ${daemon.socket} exists but nobody accepts connections on it (start pods-api serve, or check its logs)`,
  ]);
  const w = await runCli(["watch", "--socket", daemon.socket]);
  assert.equal(w.code, 1);
  assert.match(lines(w.stderr)[0]!, /^pods-api watch: The daemon is not running: /);
});

Deno.test("pods-api list says a path that is not a socket is not one", async () => {
  const file = await Deno.makeTempFile();
  try {
    const r = await runCli(["list", "--socket", file]);
    assert.equal(r.code, 1);
    assert.deepEqual(lines(r.stderr), [
      `pods-api list: ${file} is not a socket: point --socket or PODS_API_SOCKET at the daemon's socket`,
    ]);
  } finally {
    await Deno.remove(file);
  }
});

Deno.test("pods-api list says the daemon is still syncing", async () => {
  await using daemon = await startSimDaemon({
    flags: ["--simulate-sync-delay", "10m"],
    waitReady: false,
  });
  await pollUntil(
    () => Deno.lstat(daemon.socket).then(() => true, () => false),
    "the daemon's socket",
  );
  const r = await runCli(["list", "--socket", daemon.socket]);
  assert.equal(r.code, 1);
  assert.deepEqual(lines(r.stderr), [
    "pods-api list: The daemon is still syncing (pod sources are still initializing): it answers once its first read of every pod source is done; try again in a few seconds",
  ]);
});

Deno.test("pods-api list retries a rate-limited call with backoff, then says so", async () => {
  await using daemon = await startSimDaemon({
    flags: ["--rate-limit-qps", "0.001", "--rate-limit-burst", "1"],
  });
  // startSimDaemon's readiness calls took the only token, which comes back after 1000 s.
  const r = await runCli(["list", "--socket", daemon.socket]);
  assert.equal(r.code, 1);
  assert.deepEqual(lines(r.stderr), [
    "pods-api list: Rate limited by the daemon: still refused after 6 attempts with backoff (rejected by rate limit); too many List/Get calls reach this node: try again, or raise the daemon's --rate-limit-qps and --rate-limit-burst",
  ]);
});

Deno.test({
  name: "pods-api list names --socket-group when the user may not open the socket",
  // Only root can become another user here; root itself may open any socket.
  ignore: Deno.uid() !== 0,
}, async () => {
  await using daemon = await startSimDaemon();
  // A user outside the socket's group (root), with a deno and a cache it can read.
  const home = await Deno.makeTempDir({ prefix: "pods-api-nobody-" });
  try {
    await Deno.chmod(home, 0o755);
    await Deno.copyFile(Deno.execPath(), `${home}/deno`);
    await Deno.chmod(`${home}/deno`, 0o755);
    const cache = `${Deno.env.get("DENO_DIR") ?? `${Deno.env.get("HOME")}/.cache/deno`}/npm`;
    const copy = await new Deno.Command("cp", { args: ["-r", cache, `${home}/npm`] }).output();
    assert.ok(copy.success);
    await new Deno.Command("chmod", { args: ["-R", "a+rX", home] }).output();
    const r = await runCli(["list", "--socket", daemon.socket], {
      prefix: ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"],
      deno: `${home}/deno`,
      env: { HOME: home, DENO_DIR: home },
    });
    assert.equal(r.code, 1, r.stderr);
    assert.deepEqual(lines(r.stderr), [
      `pods-api list: Permission denied on ${daemon.socket}: run as root or as a member of the socket's group (the daemon's --socket-group); the daemon's --socket-group names the group allowed to connect`,
    ]);
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("pods-api finds the socket from --socket, else PODS_API_SOCKET, else the config file", async () => {
  await using daemon = await startSimDaemon();
  const config = `${daemon.dir}/config.yaml`;
  await Deno.writeTextFile(config, `socket: ${daemon.socket}\nrelist-period: 1s\n`);
  const viaEnv = await runCli(["list", "-o", "name", "-n", "logging"], {
    env: { PODS_API_SOCKET: daemon.socket },
  });
  assert.equal(viaEnv.stdout, "pod/fluent-bit-px9rd\n", viaEnv.stderr);
  const viaConfig = await runCli(["list", "-o", "name", "-n", "logging", "--config", config]);
  assert.equal(viaConfig.stdout, "pod/fluent-bit-px9rd\n", viaConfig.stderr);
  const flagWins = await runCli(["list", "--socket", "/nonexistent/a.sock", "--config", config], {
    env: { PODS_API_SOCKET: daemon.socket },
  });
  assert.match(flagWins.stderr, /No daemon socket at \/nonexistent\/a\.sock/);
  const envWins = await runCli(["list", "--config", config], {
    env: { PODS_API_SOCKET: "/nonexistent/b.sock" },
  });
  assert.match(envWins.stderr, /No daemon socket at \/nonexistent\/b\.sock/);
  const missing = await runCli(["list", "--config", `${daemon.dir}/none.yaml`]);
  assert.equal(missing.code, 1);
  assert.deepEqual(lines(missing.stderr), [
    `pods-api list: Cannot read config file "${daemon.dir}/none.yaml"`,
  ]);
});
