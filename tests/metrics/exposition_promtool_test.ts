// Prometheus' own parser and linter (`promtool check metrics`) on an
// exposition with every metric type and every escape and number case the
// writer has, so what src/metrics/exposition.ts writes is checked by the
// code that reads it, not by our own reading of the format.

import assert from "node:assert/strict";
import { Registry } from "../../src/metrics/exposition.ts";
import { Counter, Gauge, Histogram } from "../../src/metrics/instruments.ts";
import { PEERS, requirePeer } from "../_support/peers.ts";
import { assertPromtoolAccepts, promtoolCheckMetrics } from "../_support/promtool.ts";

const peer = requirePeer(PEERS.promtool);

/** A registry with counters, gauges and histograms, labelled and not, with awkward values. */
function awkwardRegistry(): Registry {
  const registry = new Registry();
  const registers = [registry];
  const plain = new Counter({
    name: "t_events_total",
    help: String.raw`Events; a backslash \ and a second line:` + "\nthere.",
    registers,
  });
  plain.inc(3);
  const labelled = new Counter({
    name: "t_requests_total",
    help: 'Requests, "quoted" in help.',
    labelNames: ["path", "code"],
    registers,
  });
  labelled.inc({ path: String.raw`C:\temp\new`, code: "200" });
  labelled.inc({ path: 'say "hi"', code: "" });
  labelled.inc({ path: "two\nlines", code: "500" }, 2);
  labelled.inc({ path: "ünïcödé ✓ {a=b,c}", code: "404" });
  new Counter({
    name: "t_never_total",
    help: "Labelled, never counted.",
    labelNames: ["x"],
    registers,
  });
  const gauge = new Gauge({ name: "t_level", help: "Levels.", labelNames: ["kind"], registers });
  gauge.set({ kind: "nan" }, Number.NaN);
  gauge.set({ kind: "inf" }, Infinity);
  gauge.set({ kind: "neg_inf" }, -Infinity);
  gauge.set({ kind: "huge" }, 1e21);
  gauge.set({ kind: "tiny" }, 1.5e-7);
  gauge.set({ kind: "negative" }, -42.5);
  new Gauge({ name: "t_idle", help: "Never set.", registers });
  const histogram = new Histogram({
    name: "t_duration_seconds",
    help: "Durations.",
    labelNames: ["method"],
    buckets: [0.0005, 0.001, 0.25, 1, 2.5],
    registers,
  });
  for (const v of [0.0001, 0.001, 0.2, 3, 100]) histogram.observe({ method: 'get\\"\n' }, v);
  histogram.observe({ method: "list" }, 0.5);
  new Histogram({ name: "t_idle_seconds", help: "Never observed.", buckets: [1], registers });
  return registry;
}

Deno.test({
  name: peer.name("promtool parses and accepts every metric type, escape and number we write"),
  ignore: peer.ignore,
  async fn() {
    peer.check();
    const body = awkwardRegistry().expose();
    // Every case is in the body (so promtool has seen it), escaped.
    for (
      const line of [
        String.raw`# HELP t_events_total Events; a backslash \\ and a second line:\nthere.`,
        String.raw`t_requests_total{path="C:\\temp\\new",code="200"} 1`,
        String.raw`t_requests_total{path="say \"hi\"",code=""} 1`,
        String.raw`t_requests_total{path="two\nlines",code="500"} 2`,
        't_level{kind="nan"} NaN',
        't_level{kind="neg_inf"} -Inf',
        't_level{kind="huge"} 1000000000000000000000',
        String.raw`t_duration_seconds_bucket{method="get\\\"\n",le="+Inf"} 5`,
        "t_idle_seconds_count 0",
      ]
    ) assert.ok(body.split("\n").includes(line), `missing: ${line}\n${body}`);
    await assertPromtoolAccepts(body);
  },
});

Deno.test({
  name: peer.name("promtool rejects the same exposition with a label value left unescaped"),
  ignore: peer.ignore,
  async fn() {
    peer.check();
    // The check above could pass by promtool reading nothing: show it reads the quotes.
    const body = awkwardRegistry().expose().replace(String.raw`say \"hi\"`, 'say "hi"');
    const { code, out } = await promtoolCheckMetrics(body);
    assert.notEqual(code, 0, out);
  },
});
