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
import { removeTree } from "../_support/remove_tree.ts";

const DIR = new URL("../../deploy/monitoring/", import.meta.url).pathname;
const PROMTOOL = "/usr/bin/promtool";

const PEER = requirePeer(PEERS.promtool);

async function promtool(args: string[], cwd = DIR): Promise<string> {
  const r = await new Deno.Command(PROMTOOL, { args, cwd, stdout: "piped", stderr: "piped" })
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
  panels: { id: number; title: string; targets: { expr: string; refId?: string }[] }[];
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

/** A panel query as Prometheus gets it: every node, a 5m rate interval. */
function panelQuery(expr: string): string {
  return expr.replaceAll("$__rate_interval", "5m").replaceAll('=~"$instance"', '=~".*"');
}

Deno.test({
  name: PEER.name("the Errors panel counts failed calls, not watches the client ended (Canceled)"),
  ignore: PEER.ignore,
  async fn() {
    PEER.check();
    const panel = DASHBOARD.panels.find((p) => /errors/i.test(p.title));
    assert.ok(panel, "an Errors panel");
    const query = panel.targets.find((t) => t.expr.includes("kubelet_pod_requests_total"));
    assert.ok(query, "the panel reads kubelet_pod_requests_total");
    const dir = await Deno.makeTempDir({ prefix: "pods-api-panel-" });
    try {
      const series = (code: string, values: string) => ({
        series:
          `kubelet_pod_requests_total{job="pods-api", instance="node-1", server_api_version="v1alpha1", status_code="${code}"}`,
        values,
      });
      const test = {
        "evaluation_interval": "1m",
        tests: [{
          interval: "1m",
          "input_series": [
            series("OK", "0+600x10"),
            // Every watch a client closes ends Canceled: 1 a second here.
            series("Canceled", "0+60x10"),
            series("Internal", "0+6x10"),
            series("Unavailable", "0x10"),
          ],
          "promql_expr_test": [{
            expr: panelQuery(query.expr),
            "eval_time": "10m",
            "exp_samples": [
              { labels: '{status_code="Internal"}', value: 0.1 },
              { labels: '{status_code="Unavailable"}', value: 0 },
            ],
          }],
        }],
      };
      await Deno.writeTextFile(`${dir}/panel_test.yaml`, JSON.stringify(test));
      assert.match(await promtool(["test", "rules", "panel_test.yaml"], dir), /SUCCESS/);
    } finally {
      removeTree(dir);
    }
  },
});

Deno.test("podmonitor.yaml scrapes the DaemonSet's metrics port as job pods-api, one instance per node", async () => {
  const monitor = parse(await Deno.readTextFile(`${DIR}podmonitor.yaml`)) as {
    kind: string;
    metadata: { namespace: string };
    spec: {
      jobLabel: string;
      selector: { matchLabels: Record<string, string> };
      podMetricsEndpoints: {
        port: string;
        path: string;
        relabelings: { sourceLabels: string[]; targetLabel: string; action: string }[];
      }[];
    };
  };
  const ds = parse(await Deno.readTextFile(`${DIR}../base/daemonset.yaml`));
  const template = ds.spec.template;
  assert.equal(monitor.kind, "PodMonitor");
  assert.equal(monitor.metadata.namespace, ds.metadata.namespace);
  for (const [k, v] of Object.entries(monitor.spec.selector.matchLabels)) {
    assert.equal(template.metadata.labels[k], v, `the pods carry ${k}=${v}`);
  }
  // Every rule and panel selects job="pods-api".
  assert.equal(template.metadata.labels[monitor.spec.jobLabel], "pods-api");
  const [endpoint] = monitor.spec.podMetricsEndpoints;
  assert.ok(endpoint);
  const port = template.spec.containers[0].ports.find((p: { name: string }) =>
    p.name === endpoint.port
  );
  assert.equal(port?.containerPort, 9469);
  assert.equal(endpoint.path, "/metrics");
  assert.deepEqual(endpoint.relabelings, [{
    action: "replace",
    sourceLabels: ["__meta_kubernetes_pod_node_name"],
    targetLabel: "instance",
  }]);
});

// Debian's promtool is built without Kubernetes service discovery, so the
// scrape config's discovery is checked against the DaemonSet here; the rest
// of it goes through promtool in the next test.
Deno.test("OPERATIONS.md's scrape config keeps the DaemonSet's metrics port and names each node", async () => {
  const ops = await Deno.readTextFile(new URL("../../docs/OPERATIONS.md", import.meta.url));
  const at = ops.indexOf("<!-- scrape-config -->");
  assert.ok(at !== -1, "the scrape-config marker");
  const block = /```yaml\n([\s\S]*?)```/.exec(ops.slice(at))?.[1];
  assert.ok(block);
  type Relabel = {
    "source_labels": string[];
    regex?: string;
    action?: string;
    "target_label"?: string;
  };
  const [job] = (parse(block) as {
    "scrape_configs": {
      "job_name": string;
      "kubernetes_sd_configs": { role: string; namespaces: { names: string[] } }[];
      "relabel_configs": Relabel[];
    }[];
  }).scrape_configs;
  assert.ok(job);
  assert.equal(job.job_name, "pods-api");
  const ds = parse(await Deno.readTextFile(`${DIR}../base/daemonset.yaml`));
  assert.deepEqual(job.kubernetes_sd_configs, [{
    role: "pod",
    namespaces: { names: [ds.metadata.namespace] },
  }]);
  const [keep, instance] = job.relabel_configs;
  assert.deepEqual(keep?.source_labels, [
    "__meta_kubernetes_pod_label_app_kubernetes_io_name",
    "__meta_kubernetes_pod_container_port_name",
  ]);
  assert.equal(keep?.action, "keep");
  const port = ds.spec.template.spec.containers[0].ports[0];
  assert.equal(
    keep?.regex,
    `${ds.spec.template.metadata.labels["app.kubernetes.io/name"]};${port.name}`,
  );
  assert.deepEqual(instance, {
    "source_labels": ["__meta_kubernetes_pod_node_name"],
    "target_label": "instance",
  });
});

// The same block through Prometheus' own config parser: `promtool check
// config` rejects kubernetes_sd_configs where it was built without that
// discovery (Debian's), so the discovery alone is swapped for a static
// target carrying the labels it would set; the job and its relabelling
// (label names, regex, actions) are checked as Prometheus reads them.
Deno.test({
  name: PEER.name("OPERATIONS.md's scrape config passes promtool check config"),
  ignore: PEER.ignore,
  async fn() {
    PEER.check();
    const ops = await Deno.readTextFile(new URL("../../docs/OPERATIONS.md", import.meta.url));
    const block = /```yaml\n([\s\S]*?)```/.exec(ops.slice(ops.indexOf("<!-- scrape-config -->")))
      ?.[1];
    assert.ok(block);
    const config = parse(block) as { "scrape_configs": Record<string, unknown>[] };
    for (const job of config.scrape_configs) {
      assert.ok(job["kubernetes_sd_configs"], "the documented discovery");
      delete job["kubernetes_sd_configs"];
      job["static_configs"] = [{
        targets: ["10.0.0.1:9469"],
        labels: {
          "__meta_kubernetes_pod_label_app_kubernetes_io_name": "pods-api",
          "__meta_kubernetes_pod_container_port_name": "metrics",
          "__meta_kubernetes_pod_node_name": "node-1",
        },
      }];
    }
    const dir = await Deno.makeTempDir({ prefix: "pods-api-scrape-" });
    try {
      await Deno.writeTextFile(`${dir}/prometheus.yml`, JSON.stringify(config));
      assert.match(await promtool(["check", "config", "prometheus.yml"], dir), /SUCCESS/);
    } finally {
      removeTree(dir);
    }
  },
});
