// Counters, gauges and histograms (src/metrics/instruments.ts): what they
// accept, what they refuse, scrape-time collect, and the samples as data.

import assert from "node:assert/strict";
import { Registry } from "../../src/metrics/exposition.ts";
import { Counter, Gauge, Histogram } from "../../src/metrics/instruments.ts";
import { metricValue } from "../_support/metric_value.ts";

Deno.test("metric and label names are checked when the metric is made", () => {
  const bad: [string, () => unknown][] = [
    ["metric name with a dash", () => new Counter({ name: "a-b", help: "x" })],
    ["metric name starting with a digit", () => new Gauge({ name: "1a", help: "x" })],
    ["no help", () => new Gauge({ name: "a", help: "" })],
    ["label with a colon", () => new Counter({ name: "a", help: "x", labelNames: ["a:b"] })],
    ["reserved label", () => new Counter({ name: "a", help: "x", labelNames: ["__name"] })],
    ["repeated label", () => new Gauge({ name: "a", help: "x", labelNames: ["l", "l"] })],
    [
      "le on a histogram",
      () => new Histogram({ name: "a", help: "x", labelNames: ["le"], buckets: [1] }),
    ],
    ["decreasing buckets", () => new Histogram({ name: "a", help: "x", buckets: [1, 0.5] })],
    ["repeated bucket", () => new Histogram({ name: "a", help: "x", buckets: [1, 1] })],
    ["infinite bucket", () => new Histogram({ name: "a", help: "x", buckets: [1, Infinity] })],
  ];
  for (const [what, make] of bad) assert.throws(make, Error, what);
  // Colons are allowed in metric names, and le on a gauge.
  new Gauge({ name: "job:a:rate5m", help: "x", labelNames: ["le", "_x1"] });
});

Deno.test("every label and no other must be given, on every call", () => {
  const c = new Counter({ name: "t_total", help: "x", labelNames: ["a", "b"] });
  c.inc({ a: "1", b: "2" });
  assert.throws(() => c.inc({ a: "1" } as never), /takes labels \[a, b\], got \[a\]/);
  assert.throws(() => c.inc({ a: "1", b: "2", c: "3" } as never), /got \[a, b, c\]/);
  assert.throws(() => c.inc(), /takes labels/);
  const plain = new Gauge({ name: "t_g", help: "x" });
  assert.throws(() => plain.set({ a: "1" } as never, 1), /takes labels \[\]/);
});

Deno.test("a counter only goes up, by a finite amount", async () => {
  const c = new Counter({ name: "t_total", help: "x", labelNames: ["k"] });
  c.inc({ k: "a" });
  c.inc({ k: "a" }, 2);
  c.inc({ k: "a" }, 0);
  c.labels({ k: "b" }).inc(0.5);
  assert.throws(() => c.inc({ k: "a" }, -1), /cannot be increased by -1/);
  assert.throws(() => c.inc({ k: "a" }, Number.NaN), /NaN/);
  assert.throws(() => c.inc({ k: "a" }, Infinity), /Infinity/);
  assert.equal(await metricValue(c, { k: "a" }), 3);
  assert.equal(await metricValue(c, { k: "b" }), 0.5);
});

Deno.test("a gauge is set, raised and lowered, alone or through labels()", async () => {
  const g = new Gauge({ name: "t_g", help: "x", labelNames: ["s"] });
  const child = g.labels({ s: "v1" });
  child.inc();
  child.inc(4);
  child.dec();
  g.inc({ s: "v1" });
  g.dec({ s: "v1" }, 2);
  assert.equal(await metricValue(g, { s: "v1" }), 3);
  child.set(-2);
  assert.equal(await metricValue(g, { s: "v1" }), -2);
  const plain = new Gauge({ name: "t_plain", help: "x" });
  assert.equal(await metricValue(plain), 0);
  plain.set(7);
  plain.dec();
  assert.equal(await metricValue(plain), 6);
  assert.throws(() => plain.set(undefined as never), TypeError);
});

Deno.test("a histogram refuses what it cannot sum", () => {
  const h = new Histogram({ name: "t_s", help: "x", buckets: [1] });
  for (const v of [Number.NaN, Infinity, -Infinity]) assert.throws(() => h.observe(v), TypeError);
  h.observe(-3); // negative values are counted (in the first bucket)
});

Deno.test("collect runs before every scrape and every get(), with this as the metric", async () => {
  const registry = new Registry();
  let reads = 0;
  new Gauge({
    name: "t_read_at_scrape",
    help: "x",
    registers: [registry],
    collect() {
      this.set(++reads * 10);
    },
  });
  const counted = new Counter({
    name: "t_collected_total",
    help: "x",
    registers: [registry],
    collect() {
      this.inc(1);
    },
  });
  assert.match(registry.expose(), /^t_read_at_scrape 10$/m);
  assert.match(registry.expose(), /^t_read_at_scrape 20$/m);
  assert.equal(await metricValue(counted), 3);
});

Deno.test("a collect that throws fails the scrape", () => {
  const registry = new Registry();
  new Gauge({
    name: "t_broken",
    help: "x",
    registers: [registry],
    collect() {
      throw new Error("cannot read");
    },
  });
  assert.throws(() => registry.expose(), /cannot read/);
});

Deno.test("get() gives every sample as data, histograms as _bucket, _sum, _count", async () => {
  const h = new Histogram({ name: "t_s", help: "H.", labelNames: ["m"], buckets: [1, 2] });
  h.observe({ m: "x" }, 1.5);
  const snapshot = await h.get();
  assert.equal(snapshot.name, "t_s");
  assert.equal(snapshot.type, "histogram");
  assert.deepEqual(snapshot.values, [
    { value: 0, labels: { m: "x", le: "1" }, metricName: "t_s_bucket" },
    { value: 1, labels: { m: "x", le: "2" }, metricName: "t_s_bucket" },
    { value: 1, labels: { m: "x", le: "+Inf" }, metricName: "t_s_bucket" },
    { value: 1.5, labels: { m: "x" }, metricName: "t_s_sum" },
    { value: 1, labels: { m: "x" }, metricName: "t_s_count" },
  ]);
  assert.equal(await metricValue(h, { m: "x" }, "_count"), 1);
  assert.equal(await metricValue(h, { m: "x" }, "_sum"), 1.5);
  assert.deepEqual(
    (await new Counter({ name: "t_c", help: "x", labelNames: ["a"] }).get()).values,
    [],
  );
});

Deno.test("a child keeps the label values it was made with, not the caller's object", () => {
  const registry = new Registry();
  const c = new Counter({ name: "t_total", help: "x", labelNames: ["a"], registers: [registry] });
  const labels = { a: "first" };
  c.inc(labels);
  labels.a = "second";
  c.inc(labels);
  const samples = registry.expose().split("\n").filter((l) => l.startsWith("t_total{"));
  assert.deepEqual(samples, ['t_total{a="first"} 1', 't_total{a="second"} 1']);
});

Deno.test("label values that look alike stay apart (1 and '1' are the same text; 'a,b' is one value)", () => {
  const registry = new Registry();
  const c = new Counter({
    name: "t_total",
    help: "x",
    labelNames: ["a", "b"],
    registers: [registry],
  });
  c.inc({ a: "x,y", b: "z" });
  c.inc({ a: "x", b: "y,z" });
  c.inc({ a: 1, b: "" });
  c.inc({ a: "1", b: "" });
  const samples = registry.expose().split("\n").filter((l) => l.startsWith("t_total{"));
  assert.deepEqual(samples, [
    't_total{a="x,y",b="z"} 1',
    't_total{a="x",b="y,z"} 1',
    't_total{a="1",b=""} 2',
  ]);
});

Deno.test("labels() binds one child: counts through it and by labels add up, bad labels fail at once", async () => {
  const c = new Counter({ name: "t_total", help: "x", labelNames: ["k"] });
  const bound = c.labels({ k: "a" });
  bound.inc();
  c.inc({ k: "a" }, 2);
  bound.inc(3);
  assert.equal(await metricValue(c, { k: "a" }), 6);
  assert.throws(() => bound.inc(-1), /cannot be increased by -1/);
  assert.throws(() => c.labels({ j: "a" } as never), /takes labels \[k\]/);
  const h = new Histogram({ name: "t_h", help: "x", labelNames: ["k"], buckets: [1, 2] });
  const child = h.labels({ k: "a" });
  child.observe(0.5);
  h.observe({ k: "a" }, 1.5);
  child.observe(5);
  const samples = (await h.get()).values.filter((s) => s.labels.k === "a");
  const count = samples.find((s) => s.metricName === "t_h_count")!;
  const sum = samples.find((s) => s.metricName === "t_h_sum")!;
  assert.deepEqual([count.value, sum.value], [3, 7]);
  assert.throws(() => child.observe(Number.NaN), TypeError);
  assert.throws(() => h.labels({} as never), /takes labels \[k\]/);
});
