// What the CLI prints is what the daemon said, as kubectl would print it:
// the resume token as resourceVersion in list, get and watch JSON (as on
// the HTTP API), a --sort-by path that no pod has refused, and a JSONPath
// template's text with no newline of ours added.
import assert from "node:assert/strict";
import { runCli, spawnCli, startSimDaemon } from "./_sim_daemon.ts";

const TOKEN = /^[0-9a-z]+\.\d+$/;

Deno.test("list, get and watch -o json carry the daemon's resume token as resourceVersion", async () => {
  await using daemon = await startSimDaemon({ pods: 12, seed: 7 });
  const s = ["--socket", daemon.socket];
  const list = JSON.parse((await runCli(["list", "-o", "json", ...s])).stdout);
  assert.match(list.metadata.resourceVersion, TOKEN);
  const selected = JSON.parse(
    (await runCli(["list", "-n", "payments", "-o", "json", ...s])).stdout,
  );
  assert.match(selected.metadata.resourceVersion, TOKEN);
  const name = `${list.items[0].metadata.namespace}/${list.items[0].metadata.name}`;
  for (const key of [name, list.items[0].metadata.uid]) {
    const pod = JSON.parse((await runCli(["get", key, "-o", "json", ...s])).stdout);
    assert.match(pod.metadata.resourceVersion, TOKEN, key);
  }
  await using watch = spawnCli(["watch", "-o", "json", ...s]);
  const events = [];
  for (;;) {
    const event = JSON.parse(await watch.nextLine());
    events.push(event);
    if (event.type === "INITIAL_SYNC_COMPLETE") break;
  }
  assert.equal(events.length, list.items.length + 1);
  const sync = events.at(-1);
  assert.match(sync.resourceVersion, TOKEN);
  for (const e of events.slice(0, -1)) {
    assert.equal(e.object.metadata.resourceVersion, sync.resourceVersion);
  }
});

Deno.test("--sort-by a path no pod has is refused as kubectl refuses it", async () => {
  await using daemon = await startSimDaemon({ pods: 12, seed: 7 });
  const r = await runCli(["list", "--sort-by", ".bogus.path", "--socket", daemon.socket]);
  assert.equal(r.code, 2);
  assert.equal(r.stdout, "");
  assert.equal(
    r.stderr,
    'pods-api list: flag --sort-by: couldn\'t find any field with path "{.bogus.path}" in the list of objects\n',
  );
  // A path some pods have still sorts (pods without it first), and an empty result is no error.
  const ok = await runCli([
    "list",
    "--sort-by",
    ".status.podIP",
    "-o",
    "name",
    "--socket",
    daemon.socket,
  ]);
  assert.equal(ok.code, 0, ok.stderr);
  const none = await runCli([
    "list",
    "-n",
    "nothere",
    "--sort-by",
    ".bogus",
    "--socket",
    daemon.socket,
  ]);
  assert.equal(none.code, 0, none.stderr);
});

Deno.test("-o jsonpath prints the template's text exactly, as kubectl does", async () => {
  await using daemon = await startSimDaemon({ pods: 12, seed: 7 });
  const s = ["--socket", daemon.socket];
  const names = await runCli([
    "list",
    "-n",
    "payments",
    "-o",
    "jsonpath={.items[*].metadata.name}",
    ...s,
  ]);
  assert.equal(names.code, 0, names.stderr);
  assert.match(names.stdout, /^\S+( \S+)*$/, "no newline after the last name");
  const lines = await runCli([
    "list",
    "-n",
    "payments",
    "-o",
    'jsonpath={range .items[*]}{.metadata.name}{"\\n"}{end}',
    ...s,
  ]);
  assert.match(lines.stdout, /^(\S+\n)+$/, "one newline per name, none more");
  const uid = await runCli([
    "get",
    "-n",
    "payments",
    names.stdout.split(" ")[0]!,
    "-o",
    "jsonpath={.metadata.uid}",
    ...s,
  ]);
  assert.match(uid.stdout, /^[0-9a-f-]{36}$/);
});
