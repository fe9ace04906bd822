// deploy/monitoring: the alert rules pass `promtool check rules` and their
// unit tests (`promtool test rules`), every alert has a case that fires it
// and one that keeps it quiet, and the rules and the Grafana dashboard name
// only metrics a live daemon's /metrics exports.
import assert from "node:assert/strict";
import { parse } from "yaml";
import { startHarness } from "../_support/daemon_harness.ts";
import { makePod } from "../_fixtures/pods.ts";
import { PodsClient } from "../../src/client/mod.ts";
import { PEERS, requirePeer } from "../_support/peers.ts";

const DIR = new URL("../../deploy/monitoring/", import.meta.url).pathname;
const PROMTOOL = "/usr/bin/promtool";

const PEER = requirePeer(PEERS.promtool);

async function promtool(args: string[]): Promise<string> {
  const r = await new Deno.Command(PROMTOOL, { args, cwd: DIR, stdout: "piped", stderr: "piped" })
    .output();
  const text = new TextDecoder().decode(r.stdout) + new TextDecoder().decode(r.stderr);
  assert.equal(r.code, 0, text);
  return text;
}

interface Rule {
  alert: string;
  expr: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface RuleTest {
  "alert_rule_test"?: { alertname: string; "exp_alerts": unknown[] }[];
}

const RULES = (parse(await Deno.readTextFile(`${DIR}alerts.yaml`)) as {
  groups: { rules: Rule[] }[];
}).groups.flatMap((g) => g.rules);
const TESTS = (parse(await Deno.readTextFile(`${DIR}alerts_test.yaml`)) as {
  tests: RuleTest[];
}).tests;
const DASHBOARD = JSON.parse(await Deno.readTextFile(`${DIR}dashboard.json`)) as {
  panels: { id: number; title: string; targets: { expr: string }[] }[];
  templating: { list: { query?: unknown; definition?: string }[] };
};

Deno.test({
  name: PEER.name("the alert rules pass promtool check rules and their promtool unit tests"),
  ignore: PEER.ignore,
  async fn() {
    PEER.check();
    assert.match(await promtool(["check", "rules", "alerts.yaml"]), /SUCCESS: \d+ rules found/);
    assert.match(await promtool(["test", "rules", "alerts_test.yaml"]), /SUCCESS/);
  },
});

Deno.test("every alert has a case that fires it and one that keeps it quiet", () => {
  const cases = TESTS.flatMap((t) => t.alert_rule_test ?? []);
  assert.ok(RULES.length >= 7);
  for (const rule of RULES) {
    const mine = cases.filter((c) => c.alertname === rule.alert);
    assert.ok(mine.some((c) => c.exp_alerts.length > 0), `${rule.alert} fires in a test`);
    assert.ok(mine.some((c) => c.exp_alerts.length === 0), `${rule.alert} stays quiet in a test`);
    assert.ok(rule.labels?.severity, `${rule.alert} has a severity`);
    assert.ok(rule.annotations?.summary && rule.annotations.description, rule.alert);
  }
  const names = RULES.map((r) => r.alert);
  for (
    const wanted of [
      "PodsApiDown",
      "PodsApiNotReady",
      "PodsApiRelistFailing",
      "PodsApiWatchersDropped",
      "PodsApiRateLimited",
    ]
  ) {
    assert.ok(names.includes(wanted), wanted);
  }
});

/** The daemon's metric names a PromQL expression reads (`up` is Prometheus's own). */
function metricNames(expr: string): string[] {
  return [...expr.matchAll(/\b((?:pods_api|kubelet_pod|process)_[a-z0-9_]+)\b/g)].map((m) =>
    m[1]!.replace(/_(bucket|sum|count)$/, "")
  );
}

Deno.test("the rules and the dashboard name only metrics a live daemon exports", async () => {
  await using h = await startHarness();
  const { status, body } = await h.http("/metrics");
  assert.equal(status, 200);
  const exported = new Set([...body.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!));
  const exprs = [
    ...RULES.map((r) => r.expr),
    ...DASHBOARD.panels.flatMap((p) => p.targets.map((t) => t.expr)),
    ...DASHBOARD.templating.list.map((v) => v.definition ?? ""),
  ];
  const named = new Set(exprs.flatMap(metricNames));
  assert.ok(named.size >= 12, `names read: ${[...named].join(", ")}`);
  for (const name of named) assert.ok(exported.has(name), `${name} is not in /metrics`);
});

Deno.test("the dashboard has the panels an operator looks for, each with a query", () => {
  const titles = DASHBOARD.panels.map((p) => p.title);
  for (
    const wanted of [
      /requests/i,
      /latency/i,
      /watchers/i,
      /relist duration/i,
      /relist failures/i,
      /phase/i,
      /memory/i,
    ]
  ) {
    assert.ok(titles.some((t) => wanted.test(t)), `a panel for ${wanted}`);
  }
  assert.equal(new Set(DASHBOARD.panels.map((p) => p.id)).size, DASHBOARD.panels.length);
  for (const p of DASHBOARD.panels) {
    assert.ok(p.targets.length > 0 && p.targets.every((t) => t.expr), p.title);
  }
});

Deno.test("pods by phase and List latency are exported for the dashboard", async () => {
  await using h = await startHarness();
  h.source.set([
    makePod({ uid: "a", name: "a" }),
    makePod({ uid: "b", name: "b", phase: "Pending" }),
    makePod({ uid: "c", name: "c" }),
  ]);
  assert.ok(await h.daemon.relistOnce());
  using client = new PodsClient({ socket: h.socket });
  await client.listPods();
  const { body } = await h.http("/metrics");
  assert.match(body, /^pods_api_cache_pods_by_phase\{phase="Running"\} 2$/m);
  assert.match(body, /^pods_api_cache_pods_by_phase\{phase="Pending"\} 1$/m);
  assert.match(body, /^pods_api_cache_pods_by_phase\{phase="Failed"\} 0$/m);
  assert.match(
    body,
    /^pods_api_request_duration_seconds_count\{server_api_version="v1alpha1",method="list"\} 1$/m,
  );
});
