/**
 * docs/OPERATIONS.md and the README tell the truth about installing: the
 * documented permissions are scripts/_permissions.ts, the documented bundle
 * command is the one the image's entrypoint runs, the worked `--kubelet-url`
 * examples are real flags reading permitted paths, every flag named is a real
 * one, and the numbers come from the unit, the DaemonSet and the code.
 *
 * @module
 */

import { INSTALL_OPTIONS } from "../../scripts/install.ts";
import { parseBundleFlags } from "../../scripts/bundle.ts";
import { DAEMON_V8_FLAGS } from "../../scripts/_v8_flags.ts";
import assert from "node:assert/strict";
import { parse } from "yaml";
import {
  bundleCommand,
  CRI_SOCKETS,
  DEFAULT_SOCKET_DIR,
  ENV_VARS,
  KUBELET_PODS_API_DIR,
  READ_PATHS,
  SYS_APIS,
} from "../../scripts/_permissions.ts";
import {
  DEFAULT_IMAGE_NAME,
  IMAGE_PATHS,
  imageEntrypoint,
  MAX_IMAGE_BYTES,
} from "../../scripts/image.ts";
import { SERVE_FLAGS } from "../../src/config_flags.ts";
import {
  RUNTIME_WAIT_INITIAL_DELAY_MS,
  RUNTIME_WAIT_MAX_DELAY_MS,
} from "../../src/sources/runtime_wait.ts";
import { checkServeArgs } from "./_serve_args.ts";
import { PEERS, requirePeer } from "../_support/peers.ts";

const SYSTEMD_ANALYZE = requirePeer(PEERS.systemdAnalyze);

const read = (path: string) => Deno.readTextFile(new URL(`../../${path}`, import.meta.url));
const OPS = await read("docs/OPERATIONS.md");
const README = await read("README.md");
const UNIT = (await read("deploy/pods-api.service")).replace(/\\\n/g, " ");
const DAEMONSET = parse(await read("deploy/base/daemonset.yaml"));

/** The first fenced block after an HTML comment marker. */
function blockAfter(marker: string): string {
  const at = OPS.indexOf(`<!-- ${marker} -->`);
  assert.ok(at !== -1, `docs/OPERATIONS.md has the ${marker} marker`);
  const m = /```\w*\n([\s\S]*?)```/.exec(OPS.slice(at));
  assert.ok(m, `a code block follows ${marker}`);
  return m[1]!;
}

/** The unit's value of a key (the last one). */
function unitValue(key: string): string {
  const values = [...UNIT.matchAll(new RegExp(`^${key}=(.*)$`, "gm"))].map((m) => m[1]!.trim());
  assert.ok(values.length > 0, `${key}= in the unit`);
  return values.at(-1)!;
}

/** Backticked items in the table row whose first cell is `name`. */
function rowItems(name: string): string[] {
  const row = OPS.split("\n").find((l) => new RegExp(`^\\|\\s*${name}\\s*\\|`).test(l));
  assert.ok(row, `permission row "${name}"`);
  const scope = row.split("|")[2]!;
  return [...scope.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
}

Deno.test("OPERATIONS.md lists exactly the permissions of scripts/_permissions.ts", async (t) => {
  await t.step(
    "write",
    () => assert.deepEqual(rowItems("write"), [DEFAULT_SOCKET_DIR, KUBELET_PODS_API_DIR]),
  );
  await t.step(
    "read",
    () =>
      assert.deepEqual(rowItems("read"), [DEFAULT_SOCKET_DIR, KUBELET_PODS_API_DIR, ...READ_PATHS]),
  );
  await t.step("env", () => assert.deepEqual(rowItems("env"), [...ENV_VARS]));
  await t.step("sys", () => assert.deepEqual(rowItems("sys"), [...SYS_APIS]));
  await t.step("the CRI sockets", () => {
    const para = /^The CRI sockets: ([\s\S]*?)\. /m.exec(OPS)?.[1] ?? "";
    assert.deepEqual([...para.matchAll(/`([^`]+)`/g)].map((m) => m[1]), [...CRI_SOCKETS]);
    assert.match(rowItems("write").join() + OPS, /\| write\s*\|[^|]*the CRI sockets below/);
    assert.match(OPS, /\| read\s*\|[^|]*the CRI sockets below/);
  });
});

Deno.test("OPERATIONS.md's bundle drop-in runs the image's command with the unit's flags", () => {
  const dropIn = blockAfter("bundle-dropin").replace(/\\\n\s*/g, "");
  const execStarts = [...dropIn.matchAll(/^ExecStart=(.*)$/gm)].map((m) => m[1]!.trim());
  assert.equal(execStarts[0], "", "the unit's ExecStart is reset first");
  const command = execStarts[1]!.split(/\s+/);
  const unitServe = unitValue("ExecStart").split(/\s+/).slice(1);
  assert.equal(unitServe[0], "serve");
  assert.deepEqual(command, [
    ...bundleCommand(IMAGE_PATHS.deno, IMAGE_PATHS.bundle),
    ...unitServe,
  ]);
  assert.deepEqual(bundleCommand(IMAGE_PATHS.deno, IMAGE_PATHS.bundle), imageEntrypoint());
  // Deno's module cache in the directory systemd makes writable for the unit.
  const cacheDir = /^CacheDirectory=(\S+)$/m.exec(dropIn)?.[1];
  assert.ok(cacheDir, "a CacheDirectory");
  assert.match(dropIn, new RegExp(`^Environment=DENO_DIR=/var/cache/${cacheDir}$`, "m"));
  // A process that exits reads the bundle into that cache first (bundle_test runs it).
  const pre = /^ExecStartPre=-(.*)$/m.exec(dropIn)?.[1]?.trim().split(/\s+/) ?? [];
  assert.equal(pre[0], IMAGE_PATHS.deno);
  assert.deepEqual(pre.slice(-2), [IMAGE_PATHS.bundle, "version"]);
  assert.ok(OPS.includes(`install -D -m 0644 dist/pods-api.js ${IMAGE_PATHS.bundle}`));
  assert.ok(OPS.includes(`${IMAGE_PATHS.deno}\n`) || OPS.includes(`) ${IMAGE_PATHS.deno}`));
});

Deno.test("OPERATIONS.md's --kubelet-url examples are real flags reading permitted files", async (t) => {
  for (const marker of ["kubelet-token-args", "kubelet-cert-args"]) {
    await t.step(marker, () => {
      const args = blockAfter(marker).split("\n").map((l) => l.replace(/^- /, "").trim())
        .filter((l) => l !== "").map((a) => a.replace("$(NODE_NAME)", "node-1"));
      const config = checkServeArgs(args);
      assert.match(config.kubeletUrl, /^https:\/\/[^/]+:10250$/);
      const files = [
        config.kubeletCaFile,
        config.kubeletClientCert,
        config.kubeletClientKey,
        config.kubeletTokenFile,
      ].filter((f) => f !== "");
      assert.ok(files.length > 0);
      for (const file of files) {
        assert.ok(READ_PATHS.some((dir) => file.startsWith(`${dir}/`)), `${file} may be read`);
      }
    });
  }
  await t.step(
    "the kubelet-url overlay mounts the kubelet's pki directory; the base names NODE_NAME",
    async () => {
      const patch = parse(await read("deploy/overlays/kubelet-url/daemonset.yaml"));
      const container = patch.spec.template.spec.containers[0];
      assert.ok(
        container.volumeMounts.some((m: { mountPath: string; readOnly?: boolean }) =>
          m.mountPath === "/var/lib/kubelet/pki" && m.readOnly === true
        ),
      );
      const base = DAEMONSET.spec.template.spec.containers[0];
      assert.ok(base.env.some((e: { name: string }) => e.name === "NODE_NAME"));
    },
  );
});

/** Flags of tools other than pods-api that the documents use. */
const OTHER_TOOLS = new Set([
  "--rm", // ctr run
  "--purge", // scripts/real_cri/down.sh
  "--now", // systemctl enable
  "--kubeconfig", // kubectl
  "--offline", // systemd-analyze security
  "--runtime-endpoint", // crictl
  "--tags",
  "--always",
  "--dirty", // git describe
  "--unsafely-ignore-certificate-errors",
  "--frozen",
  "--allow-all", // deno
  "--help",
  "--fields", // pods-api client commands
  "--cgroup-id",
  "--cgroup",
  "--mntns", // pods-api whois
  "--socket-dir", // deno task compile
  "--target",
  "--platform",
  "--build-arg",
  "--manifest",
  "--all",
  "--timestamp", // docker buildx build, podman build, buildah
]);

Deno.test("every flag the install documents name is real", () => {
  const imageFlags = [
    "--output",
    "--name",
    "--bundle",
    "--source",
    "--push",
    "--plain-http",
    "--platforms",
    "--context-only",
  ];
  // `deno task bundle`'s own flag, real if the bundle script takes it.
  assert.equal(parseBundleFlags(["--no-minify"]).minify, false);
  const known = new Set([
    "--no-minify",
    ...Object.keys(SERVE_FLAGS).map((f) => `--${f}`),
    ...bundleCommand("d", "b").filter((a) => a.startsWith("--")).map((a) => a.split("=")[0]!),
    ...DAEMON_V8_FLAGS.map((f) => f.split("=")[0]!),
    ...imageFlags,
    ...Object.keys(INSTALL_OPTIONS).map((f) => `--${f}`),
    ...OTHER_TOOLS,
  ]);
  // The README's install part; its client flags are the CLI's business (CLIENT_USAGE).
  const operating = README.slice(README.indexOf("## Operating it"));
  const readmeInstall = operating.slice(0, operating.indexOf("\n## ", 3));
  assert.ok(readmeInstall.includes("task image"));
  const documents = [["docs/OPERATIONS.md", OPS], ["README.md", readmeInstall]] as const;
  for (const [name, text] of documents) {
    const used = new Set([...text.matchAll(/(?<![\w-])--[a-z][a-z0-9-]*/g)].map((m) => m[0]));
    const unknown = [...used].filter((f) => !known.has(f));
    assert.deepEqual(unknown, [], `${name} names flags nothing has`);
  }
});

Deno.test("the install documents' numbers are the unit's, the DaemonSet's and the code's", async (t) => {
  await t.step("restart delay and start limit", () => {
    assert.equal(unitValue("RestartSec"), "5s");
    assert.match(OPS, /`Restart=on-failure` after 5 s \(`RestartSec=5s`\)/);
    const burst = unitValue("StartLimitBurst");
    const interval = unitValue("StartLimitIntervalSec");
    assert.ok(OPS.includes(`The start limit is ${burst} starts in ${interval} s`));
  });
  await t.step("the runtime wait", () => {
    const flag = SERVE_FLAGS["runtime-wait-timeout"].default;
    assert.ok(unitValue("ExecStart").includes(`--runtime-wait-timeout=${flag}`));
    assert.ok(OPS.includes(`--runtime-wait-timeout=${flag}`));
    assert.match(OPS, new RegExp(`\\(default\\s+\`${flag}\`\\)`));
    assert.equal(RUNTIME_WAIT_INITIAL_DELAY_MS, 250);
    assert.equal(RUNTIME_WAIT_MAX_DELAY_MS, 5_000);
    assert.ok(OPS.includes("250 ms, then doubling up to 5 s apart"));
  });
  await t.step("unit limits", () => {
    for (const key of ["MemoryHigh", "MemoryMax", "TasksMax", "LimitNOFILE"]) {
      assert.ok(OPS.includes(`\`${key}=${unitValue(key)}\``), key);
    }
  });
  await t.step("DaemonSet resources and probes", () => {
    const c = DAEMONSET.spec.template.spec.containers[0];
    const { requests, limits } = c.resources;
    assert.ok(OPS.includes(`\`cpu: ${requests.cpu}, memory: ${requests.memory}\``));
    assert.ok(OPS.includes(`\`memory: ${limits.memory}\` limit`));
    assert.ok(OPS.includes(`\`${c.image}\``) || OPS.includes(c.image));
    assert.ok(OPS.includes(`GET 127.0.0.1:${c.readinessProbe.httpGet.port}/readyz`));
  });
  await t.step("the image's size budget", () => {
    assert.ok(OPS.includes(`is above ${MAX_IMAGE_BYTES / 1e6} MB uncompressed`));
  });
  await t.step("no reference to a SPEC the repository does not have", () => {
    assert.doesNotMatch(README + OPS, /SPEC §/);
  });
});

Deno.test({
  name: SYSTEMD_ANALYZE.name("OPERATIONS.md's systemd-analyze security rating is the unit's"),
  ignore: SYSTEMD_ANALYZE.ignore,
  async fn() {
    SYSTEMD_ANALYZE.check();
    const documented = /`systemd-analyze security --offline=yes` rates it ([\d.]+) \((\w+)\)/
      .exec(OPS);
    assert.ok(documented, "the rating is documented");
    const dir = await Deno.makeTempDir({ prefix: "pods-api-unit-" });
    try {
      const text = await read("deploy/pods-api.service");
      await Deno.writeTextFile(
        `${dir}/pods-api.service`,
        text.replace("ExecStart=/usr/local/bin/pods-api ", "ExecStart=/bin/true "),
      );
      const out = await new Deno.Command("systemd-analyze", {
        args: ["security", "--offline=yes", "--no-pager", `${dir}/pods-api.service`],
        stdout: "piped",
        stderr: "piped",
        env: { SYSTEMD_COLORS: "0" },
      }).output();
      const text2 = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
      const rated = /Overall exposure level for pods-api\.service: ([\d.]+) (\w+)/.exec(text2);
      assert.ok(rated, text2);
      assert.deepEqual([rated[1], rated[2]], [documented[1], documented[2]]);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("OPERATIONS.md's ctr smoke test runs version with the image's own Deno and bundle", () => {
  const words = blockAfter("ctr-smoke").replace(/#.*$/gm, "").replace(/\\\n/g, " ").trim()
    .split(/\s+/);
  assert.deepEqual(words.slice(0, 5), ["ctr", "-n", "k8s.io", "run", "--rm"]);
  assert.equal(words[5], DEFAULT_IMAGE_NAME);
  const command = words.slice(7);
  // ctr replaces the entrypoint: the command names the image's Deno and bundle itself.
  assert.equal(command[0], imageEntrypoint()[0]);
  assert.equal(command[0], IMAGE_PATHS.deno);
  assert.deepEqual(command.slice(-2), [IMAGE_PATHS.bundle, "version"]);
  // The same command as the bundle drop-in's ExecStartPre (tests/ship/bundle_test.ts runs it).
  const dropIn = blockAfter("bundle-dropin").replace(/\\\n\s*/g, "");
  const pre = /^ExecStartPre=-(.*)$/m.exec(dropIn)?.[1]?.trim().split(/\s+/);
  assert.deepEqual(command, pre);
});
