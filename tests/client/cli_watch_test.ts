// `pods-api watch` as a user runs it: a streaming subprocess, ended with Ctrl-C.
import assert from "node:assert/strict";
import { spawnCli, startSimDaemon } from "./_sim_daemon.ts";
import { StaticPods } from "./_static_pods.ts";

Deno.test("pods-api watch prints an aligned table: TIME, EVENT, the pod columns, CHANGED; Ctrl-C exits 0", async () => {
  await using daemon = await startSimDaemon({ pods: 12, seed: 7 });
  await using cli = spawnCli(["watch", "--socket", daemon.socket]);
  const header = await cli.nextLine();
  assert.equal(
    header,
    "TIME       EVENT      NAMESPACE     NAME                              READY   STATUS              RESTARTS        AGE    CHANGED",
  );
  const rows: string[] = [];
  for (let i = 0; i < 12; i++) rows.push(await cli.nextLine());
  const nameAt = header.indexOf("NAME ");
  const statusAt = header.indexOf("STATUS");
  for (const row of rows) {
    assert.match(row, /^\d\d:\d\d:\d\d {3}ADDED {6}/);
    assert.equal(row[nameAt - 1], " ");
    assert.match(row.slice(nameAt), /^[a-z]/);
    assert.match(row.slice(statusAt), /^[A-Z]/);
  }
  assert.match(rows[0]!, / default {7}frontend-pg6l4vk5jv-2n4fp {9}1\/1 {5}Running /);
  const names = rows.map((r) =>
    r.slice(header.indexOf("NAMESPACE"), statusAt).replace(/\s+\S+\s*$/, "")
  );
  assert.deepEqual(names, [...names].sort());
  assert.equal(await cli.interrupt(), 0);
});

Deno.test("pods-api watch -o json prints one event per line, INITIAL_SYNC_COMPLETE, and MODIFIED with what changed", async () => {
  await using daemon = await startSimDaemon({ pods: 10, churn: 30, seed: 3 });
  await using cli = spawnCli(["watch", "-o", "json", "--socket", daemon.socket]);
  const first: Array<{ type: string; object?: { kind: string; apiVersion: string } }> = [];
  for (;;) {
    const event = JSON.parse(await cli.nextLine());
    first.push(event);
    if (event.type === "INITIAL_SYNC_COMPLETE") break;
  }
  assert.ok(first.length >= 10);
  for (const e of first.slice(0, -1)) {
    assert.equal(e.type, "ADDED");
    assert.equal(e.object?.kind, "Pod");
    assert.equal(e.object?.apiVersion, "v1");
  }
  for (;;) {
    const event = JSON.parse(await cli.nextLine());
    assert.ok(["ADDED", "MODIFIED", "DELETED"].includes(event.type), event.type);
    if (event.type !== "MODIFIED") continue;
    assert.ok(event.changed.length > 0, JSON.stringify(event.changed));
    for (const path of event.changed) assert.match(path, /^(metadata|spec|status)\./);
    break;
  }
  assert.equal(await cli.interrupt(), 0);
});

Deno.test("pods-api watch --watch-only --fields shows only changes, masked columns as -", async () => {
  // A quiet node but for one static pod the test edits: the one change comes
  // after the initial list, for a pod of that list, so its row lines up.
  await using statics = await StaticPods.create(1);
  await using daemon = await startSimDaemon({ pods: 10, seed: 3, flags: statics.flags });
  await using cli = spawnCli([
    "watch",
    "--watch-only",
    "--fields",
    "status.phase,metadata.labels",
    "--socket",
    daemon.socket,
  ]);
  const header = await cli.nextLine();
  assert.match(
    header,
    /^TIME {7}EVENT {6}NAMESPACE +NAME +READY {3}STATUS +RESTARTS {3}AGE {3}CHANGED$/,
  );
  await statics.bump(0);
  const row = await cli.nextLine();
  assert.match(
    row,
    /^\d\d:\d\d:\d\d {3}MODIFIED +kube-system +static-0-vm +- +Pending +- +- +metadata\.labels\.gen$/,
  );
  assert.equal(row.slice(header.indexOf("READY"), header.indexOf("READY") + 1), "-");
  assert.equal(row.indexOf("static-0-vm"), header.indexOf("NAME "));
  assert.equal(await cli.interrupt(), 0);
});

Deno.test("pods-api watch keeps going across a daemon restart and says so on stderr", async () => {
  await using daemon = await startSimDaemon({ pods: 6, seed: 5 });
  await using cli = spawnCli(["watch", "-o", "json", "--socket", daemon.socket]);
  for (;;) if (JSON.parse(await cli.nextLine()).type === "INITIAL_SYNC_COMPLETE") break;
  await daemon.kill("SIGKILL");
  await daemon.restart({ seed: 6 });
  // The new node's pods arrive as ADDED and the old ones as DELETED, without a new sync marker.
  const types = new Set<string>();
  while (!(types.has("ADDED") && types.has("DELETED"))) {
    const event = JSON.parse(await cli.nextLine());
    assert.notEqual(event.type, "INITIAL_SYNC_COMPLETE");
    types.add(event.type);
  }
  assert.equal(await cli.interrupt(), 0);
  assert.match(cli.stderr(), /pods-api watch: .*; retrying in \d+\.\ds\n/);
  assert.match(
    cli.stderr(),
    /pods-api watch: reconnected; changes missed while away are shown as one event each\n/,
  );
});

Deno.test("pods-api watch -o yaml prints one YAML document per event", async () => {
  await using daemon = await startSimDaemon({ pods: 2, seed: 7 });
  await using cli = spawnCli(["watch", "-o", "yaml", "--socket", daemon.socket]);
  assert.equal(await cli.nextLine(), "---");
  assert.equal(await cli.nextLine(), "type: ADDED");
  assert.equal(await cli.nextLine(), "object:");
  assert.equal(await cli.nextLine(), "  apiVersion: v1");
  assert.equal(await cli.nextLine(), "  kind: Pod");
  assert.equal(await cli.interrupt(), 0);
});
