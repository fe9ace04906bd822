import assert from "node:assert/strict";
import { parseServeConfig, serveHelp } from "../src/config.ts";
import { SERVE_FLAGS } from "../src/config_flags.ts";

const HOST = { hostname: () => "Node-A" };

function withFile(text: string) {
  return { ...HOST, readTextFile: (path: string) => path === "/etc/pods-api.yaml" ? text : "" };
}

Deno.test("parseServeConfig() gives the documented defaults", () => {
  const config = parseServeConfig([], HOST);
  assert.equal(config.socket, "/var/lib/kubelet/pods-api/pods-api.sock");
  assert.equal(config.metricsHost, "127.0.0.1");
  assert.equal(config.metricsPort, 9469);
  assert.equal(config.relistPeriodMs, 1000);
  assert.equal(config.relistThresholdMs, 180_000);
  assert.equal(config.rateLimitQps, 100);
  assert.equal(config.rateLimitBurst, 10);
  assert.equal(config.watchQueueSize, 100);
  assert.equal(config.nodeName, "node-a");
  assert.equal(config.watchHistoryMs, 300_000);
  assert.equal(config.watchHistoryEvents, 10_000);
  assert.equal(config.tombstoneTtlMs, 300_000);
  assert.equal(config.connectionRateLimitQps, 50);
  assert.equal(config.connectionRateLimitBurst, 5);
  assert.equal(config.httpBind, undefined, "the HTTP API is off by default");
  assert.equal(config.httpBookmarkPeriodMs, 60_000);
});

Deno.test("parseServeConfig() reads --watch-history as a duration, a count or both", async (t) => {
  const cases: Array<[string, number, number]> = [
    ["10m", 600_000, 10_000],
    ["500", 300_000, 500],
    ["1h,200", 3_600_000, 200],
    ["200,30s", 30_000, 200],
  ];
  for (const [text, ms, events] of cases) {
    await t.step(text, () => {
      const config = parseServeConfig(["--watch-history", text], HOST);
      assert.deepEqual([config.watchHistoryMs, config.watchHistoryEvents], [ms, events]);
    });
  }
  const http = parseServeConfig(["--http-bind-address", "[::1]:10256"], HOST);
  assert.deepEqual(http.httpBind, { host: "::1", port: 10256 });
});

Deno.test("parseServeConfig() reads a YAML or JSON file and lets flags win", async (t) => {
  await t.step("yaml", () => {
    const config = parseServeConfig(
      ["--config", "/etc/pods-api.yaml", "--relist-period", "2s"],
      withFile("relist-period: 5s\nrate-limit-qps: 20\nsimulate: true\n"),
    );
    assert.equal(config.relistPeriodMs, 2000);
    assert.equal(config.rateLimitQps, 20);
    assert.equal(config.simulate, true);
  });
  await t.step("json", () => {
    const config = parseServeConfig(
      ["--config", "/etc/pods-api.yaml"],
      withFile('{"watch-queue-size": 7, "socket-group": "pods"}'),
    );
    assert.equal(config.watchQueueSize, 7);
    assert.equal(config.socketGroup, "pods");
  });
});

Deno.test("parseServeConfig() rejects unknown keys and bad values, naming them", async (t) => {
  const cases: Array<{ name: string; args: string[]; file?: string; match: RegExp }> = [
    { name: "unknown flag", args: ["--nope"], match: /nope/ },
    {
      name: "unknown key",
      args: ["--config", "/etc/pods-api.yaml"],
      file: "nope: 1",
      match: /unknown key "nope"/,
    },
    { name: "bad duration", args: ["--relist-period", "soon"], match: /relist-period.*soon/ },
    { name: "not a number", args: ["--rate-limit-qps", "lots"], match: /rate-limit-qps.*lots/ },
    { name: "not an integer", args: ["--rate-limit-burst", "1.5"], match: /rate-limit-burst/ },
    { name: "out of range", args: ["--watch-queue-size", "0"], match: /watch-queue-size/ },
    {
      name: "bad address",
      args: ["--metrics-bind-address", "localhost"],
      match: /metrics-bind-address/,
    },
    { name: "relative socket", args: ["--socket", "x.sock"], match: /absolute/ },
    { name: "bad log level", args: ["--log-level", "loud"], match: /log-level/ },
    { name: "bad watch history", args: ["--watch-history", "5m,,3"], match: /watch-history/ },
    { name: "watch history of 0", args: ["--watch-history", "0"], match: /watch-history/ },
    { name: "bad http address", args: ["--http-bind-address", "10256"], match: /http-bind/ },
    {
      name: "TLS cert without key",
      args: ["--http-tls-cert-file", "/x.crt"],
      match: /http-tls-private-key-file/,
    },
    { name: "bad best-effort source", args: ["--source-best-effort", "etcd"], match: /etcd/ },
    {
      name: "boolean as text in file",
      args: ["--config", "/etc/pods-api.yaml"],
      file: 'simulate: "yes"',
      match: /simulate/,
    },
    {
      name: "not a mapping",
      args: ["--config", "/etc/pods-api.yaml"],
      file: "- a\n- b",
      match: /mapping/,
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      assert.throws(() => parseServeConfig(c.args, withFile(c.file ?? "")), c.match);
    });
  }
});

Deno.test("serveHelp() documents every flag with its default", () => {
  const help = serveHelp();
  for (const [name, flag] of Object.entries(SERVE_FLAGS)) {
    assert.match(help, new RegExp(`--${name}\\b`));
    if (flag.default !== "") assert.ok(help.includes(JSON.stringify(flag.default)), name);
  }
});
