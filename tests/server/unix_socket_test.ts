import * as grpc from "@grpc/grpc-js";
import { removeTree } from "../_support/remove_tree.ts";
import assert from "node:assert/strict";
import {
  identityOf,
  OwnSockets,
  prepareSocketPath,
  removeSocket,
  sameSocket,
  socketIdentity,
} from "../../src/server/unix_socket.ts";
import { callUnary, startHarness } from "../_support/daemon_harness.ts";
import { parseServeConfig } from "../../src/config.ts";
import { startDaemon } from "../../src/daemon.ts";
import { silentLogger } from "../../src/log.ts";
import { createMetricsRegistry } from "../../src/metrics/registry.ts";
import { FakePodSource } from "../../src/sources/fake/mod.ts";
import { FakeClock } from "../../src/clock.ts";

async function daemonAt(socket: string) {
  return await startDaemon(
    parseServeConfig([
      "--socket",
      socket,
      "--kubelet-compat-socket=",
      "--metrics-bind-address",
      "127.0.0.1:0",
    ]),
    {
      log: silentLogger,
      clock: new FakeClock(),
      sources: [new FakePodSource()],
      registry: createMetricsRegistry(),
      runLoops: false,
    },
  );
}

Deno.test("startGrpcServer() makes the directory 0750 and the socket 0660, never world-accessible", async () => {
  await using h = await startHarness();
  const dir = await Deno.stat(`${h.dir}/api`);
  assert.equal(dir.mode! & 0o777, 0o750);
  const sock = await Deno.lstat(h.socket);
  assert.ok(sock.isSocket);
  assert.equal(sock.mode! & 0o777, 0o660);
  const leftovers = (await Array.fromAsync(Deno.readDir(`${h.dir}/api`))).map((e) => e.name);
  assert.deepEqual(leftovers, ["pods-api.sock"], "the temporary bind name was renamed away");
});

Deno.test("startDaemon() replaces a stale socket file left by a previous run", async () => {
  const dir = await Deno.makeTempDir();
  const socket = `${dir}/pods-api.sock`;
  const stale = Deno.listen({ transport: "unix", path: socket });
  stale.close(); // Deno removes the file on close; re-create a dead one below.
  const dead = Deno.listen({ transport: "unix", path: socket });
  // Keep the file but stop accepting: close the listener without unlinking is
  // not possible in Deno, so copy its inode by linking it first.
  await Deno.link(socket, `${dir}/keep.sock`);
  dead.close();
  await Deno.rename(`${dir}/keep.sock`, socket);
  assert.ok((await Deno.lstat(socket)).isSocket);
  const daemon = await daemonAt(socket);
  try {
    const client = new grpc.Client(`unix:${socket}`, grpc.credentials.createInsecure());
    await new Promise<void>((resolve, reject) =>
      client.waitForReady(Date.now() + 5000, (err) => err ? reject(err) : resolve())
    );
    client.close();
  } finally {
    await daemon.close();
    removeTree(dir);
  }
});

Deno.test("startDaemon() refuses a path that is not a socket, and leaves it alone", async (t) => {
  const dir = await Deno.makeTempDir();
  try {
    await t.step("regular file", async () => {
      const path = `${dir}/file.sock`;
      await Deno.writeTextFile(path, "precious");
      await assert.rejects(daemonAt(path), /not a socket/);
      assert.equal(await Deno.readTextFile(path), "precious");
    });
    await t.step("symlink", async () => {
      const target = `${dir}/target`;
      await Deno.writeTextFile(target, "precious");
      const path = `${dir}/link.sock`;
      await Deno.symlink(target, path);
      await assert.rejects(daemonAt(path), /not a socket/);
      assert.ok((await Deno.lstat(path)).isSymlink);
      assert.equal(await Deno.readTextFile(target), "precious");
    });
    await t.step("directory", async () => {
      const path = `${dir}/dir.sock`;
      await Deno.mkdir(path);
      await assert.rejects(daemonAt(path), /not a socket/);
    });
  } finally {
    removeTree(dir);
  }
});

Deno.test("startDaemon() refuses to take over a socket another server is listening on", async () => {
  await using h = await startHarness();
  await assert.rejects(daemonAt(h.socket), /another server/);
  h.source.set([]);
  await h.daemon.relistOnce();
  assert.equal(
    (await callUnary(h.v1alpha1, "ListPods", {})).ok,
    true,
    "the first server still serves",
  );
});

Deno.test("prepareSocketPath() binds under a temporary name in the same directory", async () => {
  const dir = await Deno.makeTempDir();
  const prepared = await prepareSocketPath(`${dir}/s.sock`);
  assert.ok(prepared.tempPath.startsWith(`${dir}/`));
  assert.notEqual(prepared.tempPath, `${dir}/s.sock`);
  removeTree(dir);
});

Deno.test("a socket made at a freed inode number is not the socket that had it", async () => {
  const stat = (ino: number, born: number | null) =>
    ({ dev: 7, ino, birthtime: born === null ? null : new Date(born) }) as Deno.FileInfo;
  const ours = identityOf(stat(42, 1_000))!;
  assert.ok(sameSocket(identityOf(stat(42, 1_000)), ours));
  assert.equal(sameSocket(identityOf(stat(42, 1_005)), ours), false, "same inode, born later");
  assert.equal(sameSocket(identityOf(stat(43, 1_000)), ours), false);
  assert.equal(identityOf(stat(42, null))!.born, -1, "no birth time: -1");
  const own = new OwnSockets();
  own.add(ours);
  assert.equal(own.has(identityOf(stat(42, 1_005))!), false);
  // A real socket's identity carries its birth time where the file system keeps one.
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/s.sock`;
    const listener = Deno.listen({ transport: "unix", path });
    const id = (await socketIdentity(path))!;
    const info = await Deno.lstat(path);
    assert.equal(id.born, info.birthtime?.getTime() ?? -1);
    // Not ours (born at another time): left in place.
    await removeSocket(path, { ...id, born: id.born + 1 });
    assert.ok((await Deno.lstat(path)).isSocket);
    listener.close();
  } finally {
    removeTree(dir);
  }
});
