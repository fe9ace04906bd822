import assert from "node:assert/strict";
import {
  listenError,
  parseServeConfig,
  printableConfig,
  type ServeConfig,
  serveHelp,
} from "../src/config.ts";
import { type FlagSpec, numericDefault, SERVE_FLAGS, type ServeFlag } from "../src/config_flags.ts";
import { DEFAULT_QUEUE_LIMIT } from "../src/events/mod.ts";
import { DEFAULT_BURST, DEFAULT_QPS } from "../src/ratelimit/mod.ts";
import { DEFAULT_STALE_AFTER } from "../src/relist/mod.ts";
import { DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS } from "../src/sources/cri/mod.ts";
import { DEFAULT_KUBELET_POLL_MS } from "../src/sources/kubelet/mod.ts";
import { DEFAULT_RESCAN_MS } from "../src/sources/static/mod.ts";
import { KUBELET_PODS_API_SOCKET } from "../src/sources/kubelet_podsapi/mod.ts";
import { DEFAULT_SOCKET } from "../src/client/mod.ts";

const MAIN = new URL("../main.ts", import.meta.url).pathname;

const HOST = { hostname: () => "Node-A" };

function withFile(text: string) {
  return { ...HOST, readTextFile: (path: string) => path === "/etc/pods-api.yaml" ? text : "" };
}

Deno.test("parseServeConfig() gives the documented defaults", () => {
  const config = parseServeConfig([], HOST);
  assert.equal(config.socket, "/run/pods-api/pods-api.sock");
  assert.equal(config.socket, DEFAULT_SOCKET, "the client library's default is the daemon's");
  assert.equal(config.kubeletPodsApiEndpoint, KUBELET_PODS_API_SOCKET);
  assert.equal(config.kubeletCompatSocket, KUBELET_PODS_API_SOCKET);
  assert.equal(config.metricsHost, "127.0.0.1");
  assert.equal(config.metricsPort, 9469);
  assert.equal(config.relistPeriodMs, 1000);
  assert.equal(config.relistThresholdMs, 180_000);
  assert.equal(config.relistMinIntervalMs, 100);
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
    {
      name: "negative spacing",
      args: ["--relist-min-interval", "-5ms"],
      match: /relist-min-interval/,
    },
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

/** The configuration without `raw` (which also records `--config` itself). */
function effective(config: ServeConfig): Omit<ServeConfig, "raw"> {
  const { raw: _raw, ...rest } = config;
  return rest;
}

Deno.test("--print-config prints what --config takes and gives the same configuration back", () => {
  const args = [
    "--socket-group=pods",
    "--relist-period=2s",
    "--rate-limit-qps=2.5",
    "--max-watchers=7",
    "--source-best-effort=kubelet,static",
    "--node-ip=10.0.0.1, fd00::1",
    "--watch-history=500",
    "--http-bind-address=127.0.0.1:10257",
    "--simulate",
    "--log-level=debug",
  ];
  const config = parseServeConfig(args, HOST);
  const printed = printableConfig(config);
  const expected = Object.keys(SERVE_FLAGS).filter((n) => n !== "config" && n !== "print-config");
  assert.deepEqual(Object.keys(printed), expected, "one key per flag, named as the flag");
  assert.equal(printed["socket-group"], "pods");
  assert.equal(printed["max-watchers"], 7, "numbers print as numbers");
  const text = JSON.stringify(printed, null, 2);
  const back = parseServeConfig(["--config", "/etc/pods-api.yaml"], withFile(text));
  assert.deepEqual(effective(back), effective(config));
  assert.deepEqual(printableConfig(back), printed);
  const defaults = parseServeConfig([], HOST);
  const fromDefaults = JSON.stringify(printableConfig(defaults));
  assert.deepEqual(
    effective(parseServeConfig(["--config", "/etc/pods-api.yaml"], withFile(fromDefaults))),
    effective(defaults),
  );
});

Deno.test("serve --print-config output fed to serve --config prints the same", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pods-api-config-" });
  try {
    const run = async (...args: string[]) => {
      const out = await new Deno.Command(Deno.execPath(), {
        args: ["run", "--frozen", "--allow-read", "--allow-env", "--allow-sys", MAIN, ...args],
        stdout: "piped",
        stderr: "piped",
      }).output();
      const text = (b: Uint8Array) => new TextDecoder().decode(b);
      return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
    };
    const first = await run("serve", "--socket-group=pods", "--relist-period=2s", "--print-config");
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /"socket-group": "pods"/);
    assert.doesNotMatch(first.stdout, /socketGroup|relistPeriodMs/);
    await Deno.writeTextFile(`${dir}/pods-api.yaml`, first.stdout);
    const second = await run("serve", "--config", `${dir}/pods-api.yaml`, "--print-config");
    assert.equal(second.code, 0, second.stderr);
    assert.equal(second.stdout, first.stdout);
    const missing = await run("serve", "--config", `${dir}/missing.yaml`);
    assert.equal(missing.code, 2);
    assert.equal(
      missing.stderr,
      `pods-api serve: Cannot read config file "${dir}/missing.yaml": no such file or directory\n`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("--config naming a missing file says which file and why, on one line", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "pods-api-config-" });
  try {
    await t.step("missing", () => {
      assert.throws(
        () => parseServeConfig(["--config", `${dir}/missing.yaml`], { hostname: () => "n" }),
        (err: Error) =>
          err.message ===
            `Cannot read config file "${dir}/missing.yaml": no such file or directory`,
      );
    });
    await t.step("a directory", () => {
      assert.throws(
        () => parseServeConfig(["--config", dir], { hostname: () => "n" }),
        (err: Error) =>
          err.message.startsWith(`Cannot read config file "${dir}": `) &&
          !err.message.includes("\n") && !err.message.includes("os error"),
      );
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("every bound a flag declares is enforced, naming the flag", async (t) => {
  for (const [name, flag] of Object.entries(SERVE_FLAGS) as [ServeFlag, FlagSpec][]) {
    const below = typeof flag.min === "number"
      ? String(flag.min - 1)
      : typeof flag.min === "string"
      ? (flag.min === "0s" ? undefined : "0s")
      : flag.above !== undefined
      ? String(flag.above)
      : undefined;
    if (below === undefined) continue;
    await t.step(`--${name}=${below}`, () => {
      assert.throws(() => parseServeConfig([`--${name}=${below}`], HOST), new RegExp(`--${name}`));
    });
  }
});

Deno.test("--relist-min-interval: 0s turns it off; a value at or above half the period is kept as given (each relister clamps it)", () => {
  assert.equal(parseServeConfig(["--relist-min-interval", "0s"], HOST).relistMinIntervalMs, 0);
  const config = parseServeConfig(["--relist-period", "40ms"], HOST);
  assert.equal(config.relistMinIntervalMs, 100, "the default stays; the relister clamps it to 20");
  assert.equal(
    parseServeConfig(["--relist-period", "1s", "--relist-min-interval", "2s"], HOST)
      .relistMinIntervalMs,
    2000,
  );
});

Deno.test("--source-best-effort keeps each source once and refuses unknown ones", () => {
  assert.deepEqual(parseServeConfig([], HOST).bestEffortSources, []);
  const config = parseServeConfig(["--source-best-effort", "kubelet, static,kubelet"], HOST);
  assert.deepEqual(config.bestEffortSources, ["kubelet", "static"]);
  assert.throws(
    () => parseServeConfig(["--source-best-effort", "kubelet,etcd"], HOST),
    /--source-best-effort.*etcd/,
  );
});

Deno.test("components fall back to the declared flag defaults", () => {
  const config = parseServeConfig([], HOST);
  assert.equal(DEFAULT_QUEUE_LIMIT, config.watchQueueSize);
  assert.equal(DEFAULT_QPS, config.rateLimitQps);
  assert.equal(DEFAULT_BURST, config.rateLimitBurst);
  assert.equal(DEFAULT_STALE_AFTER, config.relistThresholdMs);
  assert.equal(DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS, config.runtimeRequestTimeoutMs);
  assert.equal(DEFAULT_KUBELET_POLL_MS, config.kubeletPollPeriodMs);
  assert.equal(DEFAULT_RESCAN_MS, config.fileCheckFrequencyMs);
  assert.equal(numericDefault("max-watchers"), config.maxWatchers);
  assert.equal(numericDefault("http-watch-bookmark-period"), 60_000);
});

Deno.test("listenError() names the address and the flag of a failed bind", () => {
  const inUse = new Deno.errors.AddrInUse("Address already in use (os error 98)");
  const err = listenError(inUse, "socket", "/run/pods-api.sock");
  assert.ok(err instanceof Error);
  assert.equal(
    err.message,
    "Cannot listen on /run/pods-api.sock (--socket): address already in use",
  );
  const other = new TypeError("something else");
  assert.equal(listenError(other, "socket", "/x"), other, "other errors pass through");
});
