/**
 * Child of `runtime_fd_race_test.ts`: grpc-js `unix:` clients of the
 * in-process daemon connect, call and close one after another while other
 * loops make temporary trees and remove them with the tests' clean-up
 * ({@linkcode removeTree}). Under Deno 2.9.3 every client close closes its
 * descriptor twice; a removal on the blocking pool loses a directory stream
 * to it and aborts the process. Prints one JSON line when it survives.
 *
 * Args: clients, removal loops.
 *
 * @module
 */

import * as grpc from "@grpc/grpc-js";
import { FakePodSource } from "../../src/sources/fake/mod.ts";
import { removeTree } from "../_support/remove_tree.ts";
import { rawClient, rawUnary, startTestDaemon } from "./_support.ts";

const clients = Number(Deno.args[0] ?? "300");
const loops = Number(Deno.args[1] ?? "3");
const d = await startTestDaemon({ sources: [new FakePodSource()] });
await d.daemon.relistOnce();
let stop = false;
let removed = 0;
const removers = Array.from({ length: loops }, async () => {
  while (!stop) {
    const dir = await Deno.makeTempDir({ prefix: "pods-api-fd-race-" });
    for (let i = 0; i < 8; i++) await Deno.mkdir(`${dir}/d${i}/e`, { recursive: true });
    removeTree(dir);
    removed++;
  }
});
let failedCalls = 0;
for (let i = 0; i < clients; i++) {
  // Its own subchannel pool: a new connection (and a socket to close) each time.
  const c = rawClient(d.socket, "v1alpha1.Pods", { "grpc.use_local_subchannel_pool": 1 });
  // The fake clock never refills the rate limit: past its burst, calls are
  // RESOURCE_EXHAUSTED, answered over the connection all the same.
  const { code } = await rawUnary(c, "ListPods", new Uint8Array());
  if (code !== grpc.status.OK && code !== grpc.status.RESOURCE_EXHAUSTED) failedCalls++;
  c.close();
}
stop = true;
await Promise.all(removers);
await d[Symbol.asyncDispose]();
await Deno.stdout.write(
  new TextEncoder().encode(`${JSON.stringify({ clients, removed, failedCalls })}\n`),
);
// grpc-js keeps timers of closed channels; nothing else is left to wait for.
Deno.exit(0);
