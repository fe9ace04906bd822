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
