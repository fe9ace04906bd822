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
import {
  DEFAULT_SOCKET_DIR,
  KUBELET_PODS_API_DIR,
  READ_PATHS,
} from "../../scripts/_permissions.ts";
import { checkServeArgs } from "./_serve_args.ts";
import type { ServeConfig } from "../../src/config.ts";
import { PEERS, requirePeer } from "../_support/peers.ts";

const UNIT_FILE = new URL("../../deploy/pods-api.service", import.meta.url);
const SYSTEMD_DIR = new URL("../../deploy/systemd/", import.meta.url);
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
/** The variables of drop-ins that ExecStart expands, in order. */
const DROP_IN_VARS = ["PODS_API_KUBELET_ARGS", "PODS_API_APISERVER_ARGS", "PODS_API_ARGS"];
/** ExecStart's own `serve` flags (without the drop-ins' variables). */
const SERVE_ARGS = EXEC_START.slice(2).filter((w) => !w.startsWith("$"));
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

/**
 * `systemd-analyze verify` of the unit with `dropIns` in its `.d` directory,
 * ExecStart pointing at a stand-in executable (verify requires it to exist),
 * the rest unchanged.
 *
 * @returns What verify printed: empty when it found nothing wrong.
 */
async function verify(dropIns: Record<string, string> = {}): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "pods-api-unit-" });
  try {
    const binary = `${dir}/pods-api`;
    await Deno.writeTextFile(binary, "#!/bin/sh\nexit 0\n", { mode: 0o755 });
    const copy = TEXT.replace(`ExecStart=${EXEC_START[0]} `, `ExecStart=${binary} `);
    assert.notEqual(copy, TEXT);
    await Deno.writeTextFile(`${dir}/pods-api.service`, copy);
    await Deno.mkdir(`${dir}/pods-api.service.d`);
    for (const [name, text] of Object.entries(dropIns)) {
      await Deno.writeTextFile(`${dir}/pods-api.service.d/${name}`, text);
    }
    const { code, stdout, stderr } = await new Deno.Command("systemd-analyze", {
      args: ["verify", "--man=no", `${dir}/pods-api.service`],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const output = DECODER.decode(stdout) + DECODER.decode(stderr);
    assert.equal(code, 0, output);
    return output;
  } finally {
    await Deno.remove(dir, { recursive: true });
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
  const config = checkServeArgs(SERVE_ARGS);
  assert.equal(config.simulate, false);
  assert.equal(config.metricsHost, "127.0.0.1");
});

Deno.test("pods-api.service lets the daemon write its socket directory and the kubelet's Pods API directory, nothing else", () => {
  const config = checkServeArgs(SERVE_ARGS);
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
  const config = checkServeArgs(SERVE_ARGS);
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

Deno.test("pods-api.service appends the drop-ins' flags to its own, each empty by default", () => {
  assert.deepEqual(EXEC_START.slice(-DROP_IN_VARS.length), DROP_IN_VARS.map((v) => `$${v}`));
  const environment = UNIT.get("Service")?.get("Environment") ?? [];
  for (const v of DROP_IN_VARS) assert.ok(environment.includes(`${v}=`), `${v} is set empty`);
});

/** The value of an `Environment=` assignment of `name` in a drop-in, unquoted. */
function environmentOf(dropIn: Unit, name: string): string | undefined {
  for (const raw of dropIn.get("Service")?.get("Environment") ?? []) {
    const value = raw.replace(/^"(.*)"$/, "$1");
    if (value.startsWith(`${name}=`)) return value.slice(name.length + 1);
  }
  return undefined;
}

const SOURCE_DROP_INS = [
  {
    file: "kubelet-url.conf",
    variable: "PODS_API_KUBELET_ARGS",
    on: (c: ServeConfig) => c.kubeletUrl !== "",
  },
  {
    file: "apiserver.conf",
    variable: "PODS_API_APISERVER_ARGS",
    on: (c: ServeConfig) => c.apiserverKubeconfig !== "",
  },
];

Deno.test({
  name: SYSTEMD_ANALYZE.name(
    "each source's drop-in in deploy/systemd passes systemd-analyze verify with the unit",
  ),
  ignore: SYSTEMD_ANALYZE.ignore,
  async fn(t) {
    SYSTEMD_ANALYZE.check();
    for (const { file } of SOURCE_DROP_INS) {
      await t.step(file, async () => {
        const text = await Deno.readTextFile(new URL(file, SYSTEMD_DIR));
        assert.equal(await verify({ [file]: text }), "");
        // verify reads the drop-in: a bad address in it is reported.
        const broken = await verify({ [file]: `${text}IPAddressAllow=not-an-address\n` });
        assert.match(broken, new RegExp(`${file}:\\d+: .*not-an-address`));
      });
    }
  },
});

Deno.test("each source's drop-in turns its source on with real flags and opens only IP addresses", async (t) => {
  const files: string[] = [];
  for await (const e of Deno.readDir(SYSTEMD_DIR)) files.push(e.name);
  assert.deepEqual(files.sort(), SOURCE_DROP_INS.map((d) => d.file).sort());
  for (const { file, variable, on } of SOURCE_DROP_INS) {
    await t.step(file, () => {
      const dropIn = parseUnit(Deno.readTextFileSync(new URL(file, SYSTEMD_DIR)));
      const service = dropIn.get("Service");
      assert.ok(service);
      assert.deepEqual([...service.keys()].sort(), ["Environment", "IPAddressAllow"]);
      const args = environmentOf(dropIn, variable)?.split(/\s+/);
      assert.ok(args && args.length > 0, `${variable} is set`);
      assert.ok(DROP_IN_VARS.includes(variable), "ExecStart expands it");
      const config = checkServeArgs([...SERVE_ARGS, ...args]);
      assert.ok(on(config), `${file} turns its source on`);
      for (
        const path of [config.kubeletCaFile, config.kubeletClientCert, config.apiserverKubeconfig]
      ) {
        if (path !== "") assert.ok(READ_PATHS.some((d) => path.startsWith(`${d}/`)), path);
      }
      // Exactly addresses or prefixes: never "any", and the unit's deny stays.
      for (const value of service.get("IPAddressAllow")!.flatMap((v) => v.split(/\s+/))) {
        assert.match(value, /^(\d{1,3}(\.\d{1,3}){3}|[0-9a-f:]+)(\/\d+)?$/, value);
      }
    });
  }
});

Deno.test({
  name: SYSTEMD_ANALYZE.name(
    "OPERATIONS.md's systemctl edit example keeps the unit's flags, static pods included",
  ),
  ignore: SYSTEMD_ANALYZE.ignore,
  async fn() {
    SYSTEMD_ANALYZE.check();
    const ops = await Deno.readTextFile(new URL("../../docs/OPERATIONS.md", import.meta.url));
    const at = ops.indexOf("<!-- systemctl-edit -->");
    assert.ok(at !== -1, "the systemctl-edit marker");
    const block = /```ini\n([\s\S]*?)```/.exec(ops.slice(at))?.[1];
    assert.ok(block);
    const dropIn = parseUnit(block);
    assert.equal(dropIn.get("Service")?.has("ExecStart"), false, "the unit's ExecStart is kept");
    assert.equal(await verify({ "override.conf": block }), "");
    const args = environmentOf(dropIn, "PODS_API_ARGS")?.split(/\s+/) ?? [];
    const configArg = args.find((a) => a.startsWith("--config="));
    assert.ok(configArg, "the example adds a config file");
    const file = await Deno.makeTempFile({ suffix: ".yaml" });
    try {
      await Deno.writeTextFile(file, "relist-period: 2s\n");
      const config = checkServeArgs([
        ...SERVE_ARGS,
        ...args.map((a) => a === configArg ? `--config=${file}` : a),
      ]);
      assert.equal(config.podManifestPath, "/etc/kubernetes/manifests");
      assert.equal(config.socket, "/run/pods-api/pods-api.sock");
      assert.equal(config.relistPeriodMs, 2000, "the config file is read");
    } finally {
      await Deno.remove(file);
    }
  },
});

Deno.test("OPERATIONS.md shows each source's drop-in as deploy/systemd has it", async (t) => {
  const ops = await Deno.readTextFile(new URL("../../docs/OPERATIONS.md", import.meta.url));
  const settings = (text: string) =>
    text.replace(/\\\n/g, " ").split("\n").map((l) => l.trim())
      .filter((l) => l !== "" && !l.startsWith("#"));
  for (const { file } of SOURCE_DROP_INS) {
    await t.step(file, async () => {
      const marker = `<!-- systemd-${file.replace(/\.conf$/, "")} -->`;
      const at = ops.indexOf(marker);
      assert.ok(at !== -1, marker);
      const block = /```ini\n([\s\S]*?)```/.exec(ops.slice(at))?.[1] ?? "";
      assert.ok(block.startsWith(`# deploy/systemd/${file}`), "the block names its file");
      const text = await Deno.readTextFile(new URL(file, SYSTEMD_DIR));
      assert.deepEqual(settings(block), settings(text));
    });
  }
});
