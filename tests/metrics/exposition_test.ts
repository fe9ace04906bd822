// The text exposition format 0.0.4 as src/metrics/exposition.ts writes it:
// escaping, numbers, label order, histogram buckets, the layout of a scrape.

import assert from "node:assert/strict";
import {
  CONTENT_TYPE,
  escapeHelp,
  escapeLabelValue,
  formatValue,
  Registry,
} from "../../src/metrics/exposition.ts";
import { Counter, Gauge, Histogram } from "../../src/metrics/instruments.ts";

Deno.test("HELP escapes backslash and line feed, and nothing else", () => {
  assert.equal(escapeHelp(String.raw`a\b`), String.raw`a\\b`);
  assert.equal(escapeHelp("line\nnext"), String.raw`line\nnext`);
  assert.equal(escapeHelp(String.raw`\n`), String.raw`\\n`);
  assert.equal(escapeHelp(`"quoted" tab\t é`), `"quoted" tab\t é`);
});

Deno.test("a label value escapes backslash, double quote and line feed", () => {
  assert.equal(escapeLabelValue(String.raw`C:\dir`), String.raw`C:\\dir`);
  assert.equal(escapeLabelValue(`say "hi"`), String.raw`say \"hi\"`);
  assert.equal(escapeLabelValue("a\nb"), String.raw`a\nb`);
  assert.equal(escapeLabelValue(`\\"\n`), String.raw`\\\"\n`);
  assert.equal(escapeLabelValue("{a=b,c} é"), "{a=b,c} é");
});

Deno.test("numbers: integers in full, special values as Prometheus spells them", () => {
  const cases: [number, string][] = [
    [0, "0"],
    [-0, "0"],
    [42, "42"],
    [-7, "-7"],
    [0.25, "0.25"],
    [1712345678.123, "1712345678.123"],
    [2 ** 53, "9007199254740992"],
    [1e21, "1000000000000000000000"],
    [-1e22, "-10000000000000000000000"],
    [1.5e-7, "1.5e-7"],
    [Number.NaN, "NaN"],
    [Infinity, "+Inf"],
    [-Infinity, "-Inf"],
  ];
  for (const [value, text] of cases) assert.equal(formatValue(value), text, String(value));
  // What is written parses back to the same number (Go's ParseFloat reads the same forms).
  for (const [value, text] of cases.slice(0, 11)) {
    assert.equal(Number(text), Object.is(value, -0) ? 0 : value);
  }
});

Deno.test("a scrape: HELP and TYPE per family in registration order, samples, one final newline", () => {
  const registry = new Registry();
  const registers = [registry];
  const plain = new Counter({ name: "t_plain_total", help: "No labels.", registers });
  new Counter({
    name: "t_unused_total",
    help: "Labels, never counted.",
    labelNames: ["a"],
    registers,
  });
  const gauge = new Gauge({
    name: "t_gauge",
    help: "Path C:\\x\nsecond line.",
    labelNames: ["b", "a"],
    registers,
  });
  plain.inc();
  plain.inc(2.5);
  gauge.set({ a: "1", b: "x" }, 3);
  gauge.set({ b: "y", a: 'q"\\\n' }, -1);
  gauge.set({ a: "1", b: "x" }, 4);
  assert.equal(
    registry.expose(),
    [
      "# HELP t_plain_total No labels.",
      "# TYPE t_plain_total counter",
      "t_plain_total 3.5",
      "",
      "# HELP t_unused_total Labels, never counted.",
      "# TYPE t_unused_total counter",
      "",
      "# HELP t_gauge Path C:\\\\x\\nsecond line.",
      "# TYPE t_gauge gauge",
      // Labels in the declared order whatever order the caller wrote; children in creation order.
      't_gauge{b="x",a="1"} 4',
      't_gauge{b="y",a="q\\"\\\\\\n"} -1',
      "",
    ].join("\n"),
  );
  assert.equal(registry.contentType, "text/plain; version=0.0.4; charset=utf-8");
  assert.equal(CONTENT_TYPE, registry.contentType);
  assert.equal(new Registry().expose(), "\n");
});

Deno.test("histogram: cumulative buckets with le last, +Inf equal to _count, then _sum and _count", () => {
  const registry = new Registry();
  const h = new Histogram({
    name: "t_seconds",
    help: "Durations.",
    labelNames: ["method"],
    buckets: [0.005, 0.1, 1],
    registers: [registry],
  });
  h.observe({ method: "get" }, 0.005); // on a bound: counted in that bucket (le is "<=")
  h.observe({ method: "get" }, 0.05);
  h.observe({ method: "get" }, 0.5);
  h.observe({ method: "get" }, 30);
  h.labels({ method: "list" }).observe(0.001);
  assert.equal(
    registry.expose(),
    [
      "# HELP t_seconds Durations.",
      "# TYPE t_seconds histogram",
      't_seconds_bucket{method="get",le="0.005"} 1',
      't_seconds_bucket{method="get",le="0.1"} 2',
      't_seconds_bucket{method="get",le="1"} 3',
      't_seconds_bucket{method="get",le="+Inf"} 4',
      't_seconds_sum{method="get"} 30.555',
      't_seconds_count{method="get"} 4',
      't_seconds_bucket{method="list",le="0.005"} 1',
      't_seconds_bucket{method="list",le="0.1"} 1',
      't_seconds_bucket{method="list",le="1"} 1',
      't_seconds_bucket{method="list",le="+Inf"} 1',
      't_seconds_sum{method="list"} 0.001',
      't_seconds_count{method="list"} 1',
      "",
    ].join("\n"),
  );
});

Deno.test("a histogram without labels is exposed with zero buckets before any observation", () => {
  const registry = new Registry();
  new Histogram({
    name: "t_idle_seconds",
    help: "Idle.",
    buckets: [1, 2.5],
    registers: [registry],
  });
  assert.equal(
    registry.expose(),
    [
      "# HELP t_idle_seconds Idle.",
      "# TYPE t_idle_seconds histogram",
      't_idle_seconds_bucket{le="1"} 0',
      't_idle_seconds_bucket{le="2.5"} 0',
      't_idle_seconds_bucket{le="+Inf"} 0',
      "t_idle_seconds_sum 0",
      "t_idle_seconds_count 0",
      "",
    ].join("\n"),
  );
});

Deno.test("gauge values NaN and infinities are written as Prometheus spells them", () => {
  const registry = new Registry();
  const g = new Gauge({ name: "t_g", help: "G.", labelNames: ["v"], registers: [registry] });
  g.set({ v: "nan" }, Number.NaN);
  g.set({ v: "inf" }, Infinity);
  g.set({ v: "-inf" }, -Infinity);
  g.set({ v: "big" }, 1e21);
  const samples = registry.expose().split("\n").filter((l) => l.startsWith("t_g{"));
  assert.deepEqual(samples, [
    't_g{v="nan"} NaN',
    't_g{v="inf"} +Inf',
    't_g{v="-inf"} -Inf',
    't_g{v="big"} 1000000000000000000000',
  ]);
});

Deno.test("two families may not share a name in one registry", () => {
  const registry = new Registry();
  new Counter({ name: "t_dup_total", help: "A.", registers: [registry] });
  assert.throws(
    () => new Gauge({ name: "t_dup_total", help: "B.", registers: [registry] }),
    /already registered/,
  );
  // Another registry is another scrape: the same name is fine there.
  new Counter({ name: "t_dup_total", help: "A.", registers: [new Registry()] });
});
