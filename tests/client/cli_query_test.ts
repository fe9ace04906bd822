// `pods-api get NS/NAME`, `get --container-id`, `list -l` go through PodQuery.
import assert from "node:assert/strict";
import { runClientCommand } from "../../src/client/cli.ts";
import { startHarness } from "../_support/daemon_harness.ts";
import { makePod } from "../_fixtures/pods.ts";

const ID = "abcdef012345" + "6".repeat(52);

Deno.test("the CLI finds pods by namespace/name, container ID and selectors", async () => {
  await using h = await startHarness({ flags: ["--connection-rate-limit-burst", "100"] });
  const web = makePod({ uid: "u-web", name: "web", namespace: "payments", labels: { app: "web" } });
  web.status = {
    ...web.status,
    containerStatuses: [{
      name: "app",
      image: "x",
      imageID: "",
      ready: true,
      restartCount: 0,
      containerID: `containerd://${ID}`,
    }],
  };
  h.source.set([web, makePod({ uid: "u-db", name: "db", namespace: "payments" })]);
  assert.equal(await h.daemon.relistOnce(), true);
  const run = async (command: "list" | "get" | "watch", args: string[]) => {
    const out: string[] = [];
    const code = await runClientCommand(command, [...args, "--socket", h.socket, "-o", "json"], {
      out: (t) => out.push(t),
      err: () => {},
      now: () => 0,
      signal: new AbortController().signal,
    });
    assert.equal(code, 0);
    return JSON.parse(out.join("\n"));
  };
  assert.equal((await run("get", ["payments/web"])).metadata.uid, "u-web");
  assert.equal((await run("get", ["--container-id", ID.slice(0, 12)])).metadata.name, "web");
  assert.equal((await run("get", ["u-db"])).metadata.name, "db", "a UID still uses GetPod");
  const listed = await run("list", ["-n", "payments", "-l", "app=web"]);
  assert.deepEqual([listed.metadata?.name ?? listed.items?.[0].metadata.name], ["web"]);
  await assert.rejects(
    run("list", ["-l", "app in (x"]),
    (err: { details?: string; message?: string }) =>
      /label selector/.test(err.details ?? err.message ?? ""),
  );
});
