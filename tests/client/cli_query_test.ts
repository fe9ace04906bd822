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
    const err: string[] = [];
    const code = await runClientCommand(command, [...args, "--socket", h.socket, "-o", "json"], {
      out: (t) => out.push(t),
      write: (t) => out.push(t),
      err: (t) => err.push(t),
      now: () => 0,
      signal: new AbortController().signal,
      env: () => undefined,
    });
    return { code, out: out.join("\n"), err: err.join("\n") };
  };
  const json = async (command: "list" | "get", args: string[]) => {
    const r = await run(command, args);
    assert.equal(r.code, 0, r.err);
    return JSON.parse(r.out);
  };
  assert.equal((await json("get", ["payments/web"])).metadata.uid, "u-web");
  assert.equal((await json("get", ["--container-id", ID.slice(0, 12)])).metadata.name, "web");
  assert.equal((await json("get", ["u-db"])).metadata.name, "db", "a UID still uses GetPod");
  const listed = await json("list", ["-n", "payments", "-l", "app=web"]);
  assert.deepEqual(listed.items.map((p: { metadata: { name: string } }) => p.metadata.name), [
    "web",
  ]);
  const bad = await run("list", ["-l", "app in (x"]);
  assert.equal(bad.code, 2);
  assert.match(bad.err, /^pods-api list: .*label selector/);
});
