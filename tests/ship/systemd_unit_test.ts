/**
 * deploy/pods-api.service: accepted by `systemd-analyze verify` (Debian's
 * `systemd` package; systemd need not be PID 1), hardened as documented, and
 * consistent with the daemon's flags and the executable's permissions.
 *
 * @module
 */

import assert from "node:assert/strict";
import { dirname } from "node:path";
import { EXIT } from "../../main.ts";
import { DEFAULT_SOCKET_DIR, KUBELET_PODS_API_DIR } from "../../scripts/_permissions.ts";
import { checkServeArgs } from "./_serve_args.ts";
import { PEERS, requirePeer } from "../_support/peers.ts";

const UNIT_FILE = new URL("../../deploy/pods-api.service", import.meta.url);
const DECODER = new TextDecoder();

type Unit = Map<string, Map<string, string[]>>;

/** Parses a unit file: sections of keys, each with every value it was given. */
function parseUnit(text: string): Unit {
  const unit: Unit = new Map();
  let section: Map<string, string[]> | undefined;
  const lines = text.replace(/\\\n/g, " ").split("\n");
  for (const raw of lines) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#") || line.startsWith(";")) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) {
      section = new Map();
      unit.set(header[1]!, section);
      continue;
    }
    const eq = line.indexOf("=");
    assert.ok(section && eq > 0, `unit line "${line}" is key=value inside a section`);
    const key = line.slice(0, eq).trim();
    section.set(key, [...(section.get(key) ?? []), line.slice(eq + 1).trim()]);
  }
  return unit;
}

function one(unit: Unit, section: string, key: string): string {
  const values = unit.get(section)?.get(key);
  assert.ok(values && values.length > 0, `[${section}] ${key}= is set`);
  return values.at(-1)!;
}

const TEXT = await Deno.readTextFile(UNIT_FILE);
const UNIT = parseUnit(TEXT);
const EXEC_START = one(UNIT, "Service", "ExecStart").split(/\s+/);
const SYSTEMD_ANALYZE = requirePeer(PEERS.systemdAnalyze);

/**
 * `systemd-analyze verify --root=ROOT` of the unit, unchanged, installed in a
 * temporary root that holds systemd's own units (verify needs sysinit.target
 * and the like) and, with `standIn`, an executable at ExecStart's path: what
 * the host has at that path (a leftover /usr/local/bin/pods-api) plays no part.
 */
async function verifyInRoot(standIn: boolean): Promise<{ code: number; output: string }> {
  const root = await Deno.makeTempDir({ prefix: "pods-api-unit-root-" });
  try {
    await Deno.mkdir(`${root}/etc/systemd/system`, { recursive: true });
    await Deno.mkdir(`${root}/usr/lib/systemd`, { recursive: true });
    const copied = await new Deno.Command("cp", {
      args: ["-a", "/usr/lib/systemd/system", `${root}/usr/lib/systemd/`],
    }).output();
    assert.equal(copied.code, 0, DECODER.decode(copied.stderr));
    await Deno.writeTextFile(`${root}/etc/systemd/system/pods-api.service`, TEXT);
    if (standIn) {
      await Deno.mkdir(`${root}${dirname(EXEC_START[0]!)}`, { recursive: true });
      await Deno.writeTextFile(`${root}${EXEC_START[0]}`, "#!/bin/sh\nexit 0\n", { mode: 0o755 });
    }
    const { code, stdout, stderr } = await new Deno.Command("systemd-analyze", {
      args: [
        "verify",
        "--man=no",
        `--root=${root}`,
        `${root}/etc/systemd/system/pods-api.service`,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    return { code, output: DECODER.decode(stdout) + DECODER.decode(stderr) };
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

Deno.test({
  name: SYSTEMD_ANALYZE.name("pods-api.service passes systemd-analyze verify"),
  ignore: SYSTEMD_ANALYZE.ignore,
  async fn() {
    SYSTEMD_ANALYZE.check();
    const { code, output } = await verifyInRoot(true);
    // verify exits 0 on unknown keys and bad values, and only warns: any output fails.
    assert.equal(code, 0, output);
    assert.equal(output, "");
  },
});

Deno.test({
  name: SYSTEMD_ANALYZE.name(
    "systemd-analyze verify of pods-api.service fails when ExecStart's binary is missing",
  ),
  ignore: SYSTEMD_ANALYZE.ignore,
  async fn() {
    SYSTEMD_ANALYZE.check();
    const { code, output } = await verifyInRoot(false);
    assert.notEqual(code, 0, output);
    assert.match(output, new RegExp(`Command ${EXEC_START[0]} is not executable`));
  },
});

Deno.test("pods-api.service runs serve with real flags and valid values", () => {
  assert.equal(EXEC_START[0], "/usr/local/bin/pods-api");
  assert.equal(EXEC_START[1], "serve");
  const config = checkServeArgs(EXEC_START.slice(2));
  assert.equal(config.simulate, false);
  assert.equal(config.metricsHost, "127.0.0.1");
});

Deno.test("pods-api.service lets the daemon write its socket directory and the kubelet's Pods API directory, nothing else", () => {
  const config = checkServeArgs(EXEC_START.slice(2));
  const socketDir = dirname(config.socket);
  // The executable's own write permission is these directories too.
  assert.equal(socketDir, DEFAULT_SOCKET_DIR);
  assert.equal(dirname(config.kubeletCompatSocket), KUBELET_PODS_API_DIR);
  assert.equal(dirname(config.kubeletPodsApiEndpoint), KUBELET_PODS_API_DIR);
  assert.equal(one(UNIT, "Service", "ProtectSystem"), "strict");
  assert.deepEqual(UNIT.get("Service")?.get("ReadWritePaths"), [socketDir, KUBELET_PODS_API_DIR]);
  assert.equal(`/run/${one(UNIT, "Service", "RuntimeDirectory")}`, socketDir);
  assert.equal(one(UNIT, "Service", "RuntimeDirectoryMode"), "0750");
  assert.equal(one(UNIT, "Service", "RuntimeDirectoryPreserve"), "yes");
  assert.equal(`/var/lib/${one(UNIT, "Service", "StateDirectory")}`, KUBELET_PODS_API_DIR);
  assert.equal(one(UNIT, "Service", "StateDirectoryMode"), "0750");
});

Deno.test("pods-api.service is hardened and restarts on failure", async (t) => {
  const cases: [key: string, value: string][] = [
    ["NoNewPrivileges", "yes"],
    ["PrivateTmp", "yes"],
    ["ProtectHome", "yes"],
    ["PrivateDevices", "yes"],
    ["CapabilityBoundingSet", "CAP_CHOWN"],
    ["AmbientCapabilities", ""],
    ["RestrictAddressFamilies", "AF_UNIX AF_INET AF_INET6"],
    ["Restart", "on-failure"],
    ["RestartPreventExitStatus", String(EXIT.usage)],
    ["KillSignal", "SIGTERM"],
  ];
  for (const [key, value] of cases) {
    await t.step(key, () => assert.equal(one(UNIT, "Service", key), value));
  }
  await t.step("resource limits", () => {
    for (const key of ["MemoryMax", "TasksMax", "LimitNOFILE"]) {
      assert.match(one(UNIT, "Service", key), /^\d+[KMG]?$/);
    }
  });
  await t.step("V8's JIT is not broken by MemoryDenyWriteExecute", () => {
    assert.equal(UNIT.get("Service")?.has("MemoryDenyWriteExecute"), false);
  });
  await t.step("starts after the container runtime", () => {
    assert.ok(one(UNIT, "Unit", "After").split(/\s+/).includes("containerd.service"));
  });
});

/** A systemd time span in seconds ("120", "5s", "2min", "1min 30s"). */
function seconds(span: string): number {
  const units: Record<string, number> = { "": 1, s: 1, sec: 1, min: 60, m: 60, h: 3600 };
  let total = 0;
  for (const m of span.matchAll(/(\d+)\s*([a-z]*)/g)) {
    assert.ok(m[2]! in units, `time unit of "${span}"`);
    total += Number(m[1]) * units[m[2]!]!;
  }
  return total;
}

Deno.test("pods-api.service: a runtime that comes up late cannot exhaust the start limit", () => {
  const config = checkServeArgs(EXEC_START.slice(2));
  const intervalS = seconds(one(UNIT, "Unit", "StartLimitIntervalSec"));
  const burst = Number(one(UNIT, "Unit", "StartLimitBurst"));
  const restartS = seconds(one(UNIT, "Service", "RestartSec"));
  // Without a runtime each start lasts the whole wait before it exits 3 and
  // systemd restarts it RestartSec later: count the starts one interval can hold.
  const cycleS = config.runtimeWaitTimeoutMs / 1000 + restartS;
  const startsPerInterval = Math.ceil(intervalS / cycleS);
  assert.ok(
    startsPerInterval < burst,
    `${startsPerInterval} start(s) per ${intervalS}s reach StartLimitBurst=${burst}`,
  );
  // The boot the issue describes: the runtime socket appears 20 s late
  // (tests/ship/late_runtime_test.ts runs it with these very flags).
  assert.ok(config.runtimeWaitTimeoutMs > 20_000);
  // Exit 3 is restarted: only the usage code is in RestartPreventExitStatus.
  assert.deepEqual(UNIT.get("Service")?.get("RestartPreventExitStatus"), [String(EXIT.usage)]);
});
