/**
 * deploy/ as kustomize renders it (`kubectl kustomize deploy/base` and each
 * overlay): the DaemonSet's arguments (and its config map's keys) are real
 * `serve` flags, and its mounts and probes agree with them (socket directory
 * mounted read-write at the same path as on the node, everything else
 * read-only, probes on the metrics port); no RBAC where no source needs it.
 * Every case needs kubectl: what is checked is what kustomize renders.
 *
 * @module
 */

import assert from "node:assert/strict";
import { dirname } from "node:path";
import { parseAllDocuments } from "yaml";
import {
  CRI_SOCKETS,
  DEFAULT_SOCKET_DIR,
  KUBELET_PODS_API_DIR,
  READ_PATHS,
} from "../../scripts/_permissions.ts";
import { DEFAULT_IMAGE_NAME } from "../../scripts/image.ts";
import { checkServeArgs } from "./_serve_args.ts";
import { SERVE_FLAGS } from "../../src/config_flags.ts";
import { DEFAULT_POD_RESOURCES_ENDPOINT } from "../../src/sources/podresources/mod.ts";
import { PEERS, requirePeer } from "../_support/peers.ts";
import { expandArgs, kustomizeWith } from "./_kustomize.ts";

interface HostPathVolume {
  name: string;
  hostPath?: { path: string; type?: string };
  emptyDir?: Record<string, unknown>;
  configMap?: { name: string };
}

interface Mount {
  name: string;
  mountPath: string;
  readOnly?: boolean;
}

interface Probe {
  httpGet: { host?: string; path: string; port: number | string };
}

interface Container {
  name: string;
  image: string;
  command?: string[];
  args: string[];
  env?: { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  resources: { requests: Record<string, string>; limits: Record<string, string> };
  securityContext: {
    privileged?: boolean;
    allowPrivilegeEscalation?: boolean;
    readOnlyRootFilesystem?: boolean;
    capabilities?: { drop?: string[]; add?: string[] };
  };
  volumeMounts: Mount[];
}

interface DaemonSet {
  kind: string;
  metadata: { name: string; namespace: string };
  spec: {
    template: {
      spec: {
        hostNetwork?: boolean;
        hostPID?: boolean;
        initContainers?: Container[];
        containers: Container[];
        volumes: HostPathVolume[];
      };
    };
  };
}

const KUBECTL = "/usr/bin/kubectl";
const KUBECTL_PEER = requirePeer(PEERS.kubectl);

function parseAll(text: string): unknown[] {
  return parseAllDocuments(text).map((d) => d.toJS());
}
const DEPLOY = new URL("../../deploy/", import.meta.url).pathname;

interface Rendered {
  readonly docs: { kind: string; metadata: { name: string }; data?: Record<string, string> }[];
  readonly daemonSet: DaemonSet;
}

/** `kubectl kustomize DIR`, parsed. */
async function render(dir: string): Promise<Rendered> {
  const r = await new Deno.Command(KUBECTL, {
    args: ["kustomize", `${DEPLOY}${dir}`],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(r.code, 0, new TextDecoder().decode(r.stderr));
  const text = new TextDecoder().decode(r.stdout);
  const docs = parseAll(text).filter((d) => d !== null) as Rendered["docs"];
  const daemonSet = docs.find((d) => d.kind === "DaemonSet") as unknown as DaemonSet;
  assert.ok(daemonSet, `${dir} renders a DaemonSet`);
  return { docs, daemonSet };
}

/** The config file the DaemonSet's --config names, written where the test can read it. */
async function configFile(rendered: Rendered, container: Container): Promise<string | undefined> {
  const arg = container.args.find((a) => a.startsWith("--config="));
  if (arg === undefined) return undefined;
  const path = arg.slice("--config=".length);
  const mount = container.volumeMounts.find((m) => path.startsWith(`${m.mountPath}/`));
  assert.ok(mount, `--config ${path} is on a mount`);
  const volume = rendered.daemonSet.spec.template.spec.volumes.find((v) => v.name === mount.name);
  const map = rendered.docs.find((d) =>
    d.kind === "ConfigMap" && d.metadata.name === volume?.configMap?.name
  );
  const key = path.slice(mount.mountPath.length + 1);
  const data = map?.data?.[key];
  assert.ok(data !== undefined, `config map "${volume?.configMap?.name}" holds "${key}"`);
  const file = await Deno.makeTempFile({ suffix: ".yaml" });
  await Deno.writeTextFile(file, data);
  return file;
}

type PodSpec = DaemonSet["spec"]["template"]["spec"];

// What the cases read, rendered once by the first case that runs (kubectl is
// looked for only then, so a missing one fails or ignores each case by name).
let BASE!: Rendered;
let DOC!: DaemonSet;
let POD!: PodSpec;
let CONTAINER!: Container;
let ARGS!: string[];
let CONFIG!: ReturnType<typeof checkServeArgs>;
let KUBELET_API!: Rendered;
let loaded: Promise<void> | undefined;

/** Renders the base and the kubelet-pods-api overlay into the variables above. */
async function renderDeploy(): Promise<void> {
  BASE = await render("base");
  DOC = BASE.daemonSet;
  POD = DOC.spec.template.spec;
  CONTAINER = POD.containers[0]!;
  ARGS = expandedArgs();
  CONFIG = checkServeArgs((await runnableArgs(BASE, CONTAINER, ARGS)).slice(1));
  KUBELET_API = await render("overlays/kubelet-pods-api");
}

/**
 * `Deno.test` for a case that reads deploy/ as kustomize renders it:
 * ignored (saying why) or failed without kubectl, see requirePeer().
 */
function renderedTest(name: string, fn: (t: Deno.TestContext) => void | Promise<void>): void {
  Deno.test({
    name: KUBECTL_PEER.name(name),
    ignore: KUBECTL_PEER.ignore,
    async fn(t) {
      KUBECTL_PEER.check();
      await (loaded ??= renderDeploy());
      await fn(t);
    },
  });
}

/** The container's arguments as the kubelet passes them ($(VAR) from env). */
function expandedArgs(): string[] {
  return expandArgs(CONTAINER.args, CONTAINER.env ?? [], { "spec.nodeName": "node-1" });
}

/** The args with --config pointing at a copy of the config map's file. */
async function runnableArgs(rendered: Rendered, container: Container, args: string[]) {
  const file = await configFile(rendered, container);
  return args.map((a) => a.startsWith("--config=") && file ? `--config=${file}` : a);
}

/** The mount that holds `path` inside the container, and its node path. */
function mountFor(path: string): { mount: Mount; hostPath: string } {
  const mount = CONTAINER.volumeMounts
    .filter((m) => path === m.mountPath || path.startsWith(`${m.mountPath}/`))
    .sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
  assert.ok(mount, `"${path}" is on a mounted volume`);
  const volume = POD.volumes.find((v) => v.name === mount.name);
  assert.ok(volume?.hostPath, `volume "${mount.name}" is a hostPath`);
  return { mount, hostPath: volume.hostPath.path + path.slice(mount.mountPath.length) };
}

renderedTest("the DaemonSet runs serve of the image deno task image builds", () => {
  assert.equal(DOC.kind, "DaemonSet");
  assert.equal(DOC.metadata.namespace, "kube-system");
  assert.equal(CONTAINER.image, DEFAULT_IMAGE_NAME);
  // The image's entrypoint carries Deno's permission flags: a command would drop them.
  assert.equal(CONTAINER.command, undefined);
  assert.equal(ARGS[0], "serve");
  assert.equal(CONFIG.nodeName, "node-1");
  assert.equal(CONFIG.simulate, false);
});

renderedTest("the DaemonSet mounts the socket's directory read-write at its node path", () => {
  const socketDir = dirname(CONFIG.socket);
  assert.equal(socketDir, DEFAULT_SOCKET_DIR, "the executable may write there");
  const { mount, hostPath } = mountFor(CONFIG.socket);
  assert.equal(mount.mountPath, socketDir, "the directory is mounted, not the socket");
  assert.notEqual(mount.readOnly, true);
  assert.equal(hostPath, CONFIG.socket, "node agents find the socket at the same path");
});

renderedTest(
  "daemonset.yaml mounts the kubelet's Pods API directory read-write at its node path",
  async (t) => {
    for (const path of [CONFIG.kubeletPodsApiEndpoint, CONFIG.kubeletCompatSocket]) {
      await t.step(path, () => {
        assert.equal(dirname(path), KUBELET_PODS_API_DIR, "the executable may write there");
        const { mount, hostPath } = mountFor(path);
        assert.equal(
          mount.mountPath,
          KUBELET_PODS_API_DIR,
          "the directory: the kubelet replaces its socket",
        );
        assert.notEqual(mount.readOnly, true);
        assert.equal(hostPath, path);
      });
    }
  },
);

renderedTest("the DaemonSet mounts the CRI socket's directory read-only", () => {
  const path = new URL(CONFIG.runtimeEndpoint).pathname;
  assert.ok(CRI_SOCKETS.includes(path), `the executable may connect to "${path}"`);
  const { mount, hostPath } = mountFor(path);
  assert.equal(mount.mountPath, dirname(path));
  assert.equal(mount.readOnly, true);
  assert.equal(hostPath, path);
});

renderedTest(
  "the DaemonSet mounts manifests read-only, and nothing its flags do not use",
  async (t) => {
    for (const path of [CONFIG.podManifestPath]) {
      await t.step(path, () => {
        const { mount, hostPath } = mountFor(path);
        assert.equal(mount.readOnly, true);
        assert.equal(hostPath, path);
      });
    }
    await t.step("every host mount holds a path a flag names", () => {
      const used = [
        CONFIG.socket,
        new URL(CONFIG.runtimeEndpoint).pathname,
        CONFIG.podManifestPath,
        CONFIG.kubeletClientCert,
        CONFIG.kubeletCaFile,
        CONFIG.kubeletTokenFile,
        CONFIG.kubeletPodsApiEndpoint,
        CONFIG.kubeletCompatSocket,
        new URL(CONFIG.podResourcesEndpoint || DEFAULT_POD_RESOURCES_ENDPOINT).pathname,
      ].filter((p) => p !== "");
      for (const m of CONTAINER.volumeMounts) {
        if (!POD.volumes.find((v) => v.name === m.name)?.hostPath) continue;
        assert.ok(
          used.some((p) => p === m.mountPath || p.startsWith(`${m.mountPath}/`)),
          `${m.mountPath} is mounted but no flag reads it`,
        );
      }
    });
    await t.step("every other host mount is read-only", () => {
      for (const m of CONTAINER.volumeMounts) {
        const volume = POD.volumes.find((v) => v.name === m.name);
        if (volume?.hostPath && ![DEFAULT_SOCKET_DIR, KUBELET_PODS_API_DIR].includes(m.mountPath)) {
          assert.equal(m.readOnly, true, m.mountPath);
        }
      }
    });
  },
);

renderedTest("the DaemonSet probes /healthz and /readyz on the metrics address", async (t) => {
  const cases = [
    { name: "liveness", probe: CONTAINER.livenessProbe, path: "/healthz" },
    { name: "readiness", probe: CONTAINER.readinessProbe, path: "/readyz" },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      assert.ok(c.probe, `a ${c.name} probe`);
      assert.equal(c.probe.httpGet.path, c.path);
      assert.equal(c.probe.httpGet.port, CONFIG.metricsPort);
      assert.equal(c.probe.httpGet.host ?? "<pod IP>", CONFIG.metricsHost);
    });
  }
  await t.step("a loopback metrics address needs the node's network", () => {
    assert.ok(CONFIG.metricsHost === "127.0.0.1" || CONFIG.metricsHost === "::1");
    assert.equal(POD.hostNetwork, true);
    assert.notEqual(POD.hostPID, true);
  });
});

renderedTest("the DaemonSet sets requests and limits and drops privileges", () => {
  const { requests, limits } = CONTAINER.resources;
  assert.ok(requests.cpu && requests.memory && limits.memory);
  const mi = (q: string) => Number(/^(\d+)Mi$/.exec(q)?.[1]);
  assert.ok(mi(requests.memory!) <= mi(limits.memory!));
  // Measured peak with 1000 simulated pods under load: 217Mi (docs/OPERATIONS.md).
  assert.ok(mi(limits.memory!) >= 256);
  const security = CONTAINER.securityContext;
  assert.equal(security.privileged, false);
  assert.equal(security.allowPrivilegeEscalation, false);
  assert.equal(security.readOnlyRootFilesystem, true);
  assert.deepEqual(security.capabilities, { drop: ["ALL"], add: ["CHOWN"] });
});

renderedTest(
  "the base renders a service account, a config map and the DaemonSet, and no RBAC",
  () => {
    const kinds = BASE.docs.map((d) => d.kind).sort();
    assert.deepEqual(kinds, ["ConfigMap", "DaemonSet", "ServiceAccount"]);
    assert.equal(
      (POD as { serviceAccountName?: string }).serviceAccountName,
      BASE.docs.find((d) => d.kind === "ServiceAccount")!.metadata.name,
    );
    assert.equal(CONFIG.logLevel, "info", "the config map's settings are read");
  },
);

renderedTest("the no-kubelet-pods-api overlay is the base", async () => {
  const overlay = await render("overlays/no-kubelet-pods-api");
  assert.deepEqual(overlay.docs, BASE.docs);
});

renderedTest(
  "the kubelet-pods-api overlay: own socket directory, the kubelet's read-only, no RBAC",
  () => {
    const pod = KUBELET_API.daemonSet.spec.template.spec;
    const container = pod.containers[0]!;
    const arg = (name: string) =>
      container.args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
    assert.equal(arg("socket"), "/run/pods-api/pods-api.sock");
    assert.equal(arg("kubelet-pods-api-endpoint"), "/var/lib/kubelet/pods-api/pods-api.sock");
    const mount = (path: string) => container.volumeMounts.find((m) => m.mountPath === path);
    assert.notEqual(mount("/run/pods-api")?.readOnly, true);
    assert.equal(mount("/var/lib/kubelet/pods-api")?.readOnly, true);
    const volume = (name: string) => pod.volumes.find((v) => v.name === name)?.hostPath?.path;
    assert.equal(volume(mount("/run/pods-api")!.name), "/run/pods-api");
    assert.equal(volume(mount("/var/lib/kubelet/pods-api")!.name), "/var/lib/kubelet/pods-api");
    assert.deepEqual(KUBELET_API.docs.map((d) => d.kind).sort(), [
      "ConfigMap",
      "DaemonSet",
      "ServiceAccount",
    ]);
  },
);

renderedTest("the kubelet-pods-api overlay's args are serve flags", async () => {
  assert.ok("kubelet-pods-api-endpoint" in SERVE_FLAGS);
  const container = KUBELET_API.daemonSet.spec.template.spec.containers[0]!;
  const args = expandArgs(container.args, container.env ?? [], { "spec.nodeName": "node-1" });
  const config = checkServeArgs((await runnableArgs(KUBELET_API, container, args)).slice(1));
  assert.equal(config.socket, "/run/pods-api/pods-api.sock");
});

renderedTest(
  "the kubelet-url overlay: RBAC for nodes/pods, the token and the kubelet's CA mounted",
  async () => {
    const overlay = await render("overlays/kubelet-url");
    const kinds = overlay.docs.map((d) => d.kind).sort();
    assert.deepEqual(kinds, [
      "ClusterRole",
      "ClusterRoleBinding",
      "ConfigMap",
      "DaemonSet",
      "ServiceAccount",
    ]);
    const pod = overlay.daemonSet.spec.template.spec as PodSpec & {
      automountServiceAccountToken?: boolean;
    };
    assert.equal(pod.automountServiceAccountToken, true);
    const container = pod.containers[0]!;
    const args = expandArgs(container.args, container.env ?? [], { "spec.nodeName": "node-1" });
    const config = checkServeArgs((await runnableArgs(overlay, container, args)).slice(1));
    assert.equal(config.kubeletUrl, "https://node-1:10250");
    const ca = container.volumeMounts.find((m) =>
      config.kubeletCaFile.startsWith(`${m.mountPath}/`)
    );
    assert.equal(ca?.readOnly, true);
    const role = overlay.docs.find((d) => d.kind === "ClusterRole") as unknown as {
      rules: { resources: string[]; verbs: string[] }[];
    };
    assert.deepEqual(role.rules, [{ apiGroups: [""], resources: ["nodes/pods"], verbs: ["get"] }]);
  },
);

/** The overlays in deploy/overlays, by directory name. */
async function overlayNames(): Promise<string[]> {
  const names: string[] = [];
  for await (const e of Deno.readDir(`${DEPLOY}overlays`)) if (e.isDirectory) names.push(e.name);
  assert.ok(names.length >= 4, names.join());
  return names.sort();
}

/** An overlay's container args as the daemon parses them. */
async function overlayConfig(rendered: Rendered) {
  const container = rendered.daemonSet.spec.template.spec.containers[0]!;
  const args = expandArgs(container.args, container.env ?? [], { "spec.nodeName": "node-1" });
  return checkServeArgs((await runnableArgs(rendered, container, args)).slice(1));
}

renderedTest("every overlay serves every service on /run/pods-api/pods-api.sock", async (t) => {
  for (const name of await overlayNames()) {
    await t.step(name, async () => {
      const config = await overlayConfig(await render(`overlays/${name}`));
      assert.equal(config.socket, "/run/pods-api/pods-api.sock");
    });
  }
});

renderedTest(
  "an overlay grants nodes/proxy only when its name says so, and only with get",
  async (t) => {
    for (const name of await overlayNames()) {
      await t.step(name, async () => {
        const rendered = await render(`overlays/${name}`);
        const rules = rendered.docs.filter((d) => d.kind === "ClusterRole").flatMap((d) =>
          (d as unknown as { rules: { resources: string[]; verbs: string[] }[] }).rules
        );
        const proxy = rules.filter((r) => r.resources.includes("nodes/proxy"));
        assert.equal(proxy.length > 0, name.includes("nodes-proxy"), `${name}: nodes/proxy`);
        for (const r of proxy) assert.deepEqual(r.verbs, ["get"]);
      });
    }
  },
);

renderedTest(
  "the kubelet-url-nodes-proxy overlay is kubelet-url plus get on nodes/proxy",
  async () => {
    const plain = await render("overlays/kubelet-url");
    const proxy = await render("overlays/kubelet-url-nodes-proxy");
    const added = proxy.docs.filter((d) =>
      !plain.docs.some((p) => JSON.stringify(p) === JSON.stringify(d))
    );
    assert.deepEqual(added.map((d) => d.kind).sort(), ["ClusterRole", "ClusterRoleBinding"]);
    const binding = added.find((d) => d.kind === "ClusterRoleBinding") as unknown as {
      subjects: { name: string }[];
    };
    const account = proxy.docs.find((d) => d.kind === "ServiceAccount")!;
    assert.deepEqual(binding.subjects.map((s) => s.name), [account.metadata.name]);
  },
);

renderedTest("every overlay keeps --http-cert-dir on a writable host mount", async (t) => {
  for (const name of ["base", ...(await overlayNames()).map((n) => `overlays/${n}`)]) {
    await t.step(name, async () => {
      const rendered = await render(name);
      const config = await overlayConfig(rendered);
      const pod = rendered.daemonSet.spec.template.spec;
      const mount = pod.containers[0]!.volumeMounts
        .filter((m) => config.httpCertDir.startsWith(`${m.mountPath}/`))
        .sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
      assert.ok(mount, `${config.httpCertDir} is on a mount`);
      assert.notEqual(mount.readOnly, true, `${mount.mountPath} is writable`);
      assert.ok(pod.volumes.find((v) => v.name === mount.name)?.hostPath, "kept on the node");
    });
  }
});

renderedTest(
  "the DaemonSet's init container has Deno read the bundle into the daemon's DENO_DIR",
  () => {
    const [init, ...more] = POD.initContainers ?? [];
    assert.ok(init, "an init container");
    assert.equal(more.length, 0);
    // The image's entrypoint (the same bundle, the same flags), only loading it.
    assert.equal(init.image, CONTAINER.image);
    assert.equal(init.command, undefined);
    assert.deepEqual(init.args, ["--help"]);
    const denoDir = (c: Container) => c.env?.find((e) => e.name === "DENO_DIR")?.value;
    assert.ok(denoDir(init), "the init container sets DENO_DIR");
    assert.equal(denoDir(CONTAINER), denoDir(init), "the daemon reads the same DENO_DIR");
    const volumeOf = (c: Container) =>
      c.volumeMounts.find((m) => m.mountPath === denoDir(c) && m.readOnly !== true)?.name;
    const name = volumeOf(init);
    assert.ok(name, "DENO_DIR is a writable mount in the init container");
    assert.equal(volumeOf(CONTAINER), name, "and the same volume, writable, in the daemon's");
    assert.ok(POD.volumes.find((v) => v.name === name)?.emptyDir, "an emptyDir");
    // No more privilege than the daemon's, and none of its capabilities.
    assert.equal(init.securityContext.readOnlyRootFilesystem, true);
    assert.equal(init.securityContext.allowPrivilegeEscalation, false);
    assert.deepEqual(init.securityContext.capabilities, { drop: ["ALL"] });
    assert.ok(init.resources.limits.memory);
  },
);

renderedTest(
  "the metrics-on-node-ip component serves metrics and probes on the node's address, on every overlay",
  async (t) => {
    for (const name of ["base", ...(await overlayNames()).map((n) => `overlays/${n}`)]) {
      await t.step(name, async () => {
        const docs = await kustomizeWith(name, ["components/metrics-on-node-ip"]);
        const ds = docs.find((d) => (d as DaemonSet).kind === "DaemonSet") as DaemonSet;
        const pod = ds.spec.template.spec;
        const container = pod.containers[0]!;
        assert.equal(pod.hostNetwork, true, "the pod's address is the node's");
        const args = expandArgs(container.args, container.env ?? [], {
          "spec.nodeName": "node-1",
          "status.podIP": "10.0.0.7",
        });
        const bind = args.find((a) => a.startsWith("--metrics-bind-address="));
        assert.equal(bind, "--metrics-bind-address=10.0.0.7:9469");
        for (const probe of [container.livenessProbe, container.readinessProbe]) {
          assert.ok(probe);
          assert.equal(probe.httpGet.host, undefined, "the kubelet probes the pod's address");
          assert.equal(probe.httpGet.port, 9469);
        }
      });
    }
  },
);

renderedTest("OPERATIONS.md lists the base's mounts as kustomize renders them", async (t) => {
  const ops = await Deno.readTextFile(new URL("../../docs/OPERATIONS.md", import.meta.url));
  const start = ops.indexOf("- Mounts of the base");
  assert.ok(start !== -1, "the mounts list");
  const list = ops.slice(start, ops.indexOf("\n- ", start + 1));
  /** The absolute paths in backticks of the sub-item that starts with `label:`. */
  const paths = (label: string) => {
    const item = new RegExp(`\\n {2}- ${label}: ([\\s\\S]*?)(?=\\n {2}- |\\n\\n)`).exec(list)?.[1];
    assert.ok(item, `a "${label}" item`);
    return [...item.matchAll(/`(\/[^`\s]*)`/g)].map((m) => m[1]!)
      // The CRI-O alternative to /run/containerd is named, not mounted.
      .filter((p) => p !== "/var/run/crio").sort();
  };
  const volume = (m: Mount) => POD.volumes.find((v) => v.name === m.name)!;
  const cases = [
    { label: "read-write", is: (m: Mount) => !volume(m).emptyDir && m.readOnly !== true },
    { label: "read-only", is: (m: Mount) => m.readOnly === true },
    { label: "`emptyDir`", is: (m: Mount) => volume(m).emptyDir !== undefined },
  ];
  for (const c of cases) {
    await t.step(c.label, () => {
      const rendered = CONTAINER.volumeMounts.filter(c.is).map((m) => m.mountPath).sort();
      assert.deepEqual(paths(c.label), rendered);
    });
  }
  await t.step("every mount is listed once", () => {
    const listed = cases.flatMap((c) => paths(c.label));
    assert.deepEqual(listed.sort(), CONTAINER.volumeMounts.map((m) => m.mountPath).sort());
  });
  await t.step("only the kubelet-url overlays mount /var/lib/kubelet/pki", async () => {
    assert.ok(!CONTAINER.volumeMounts.some((m) => m.mountPath === "/var/lib/kubelet/pki"));
    for (const name of await overlayNames()) {
      const container = (await render(`overlays/${name}`)).daemonSet.spec.template.spec
        .containers[0]!;
      const pki = container.volumeMounts.find((m) => m.mountPath === "/var/lib/kubelet/pki");
      assert.equal(pki !== undefined, name.startsWith("kubelet-url"), name);
      if (pki) assert.equal(pki.readOnly, true);
    }
  });
});

renderedTest(
  "the process-lookups overlay: host PIDs, the host's /proc and cgroup tree read-only where its flags name them, readable in the binary's scope",
  async () => {
    const rendered = await render("overlays/process-lookups");
    const pod = rendered.daemonSet.spec.template.spec;
    const container = pod.containers[0]!;
    assert.equal(pod.hostPID, true);
    const config = await overlayConfig(rendered);
    const hostPathAt = (dir: string) => {
      const mount = container.volumeMounts.find((m) => m.mountPath === dir);
      assert.ok(mount, `${dir} is mounted`);
      assert.equal(mount.readOnly, true, `${dir} is read-only`);
      assert.ok(READ_PATHS.includes(dir), `the binary may read ${dir}`);
      return pod.volumes.find((v) => v.name === mount.name)?.hostPath?.path;
    };
    assert.equal(hostPathAt(config.hostProc), "/proc");
    assert.equal(hostPathAt(config.hostCgroupRoot), "/sys/fs/cgroup");
    assert.deepEqual(container.securityContext.capabilities, {
      drop: ["ALL"],
      add: ["CHOWN", "SYS_PTRACE"],
    });
    // Everything else is the base's.
    assert.deepEqual(
      container.args.filter((a) => !a.startsWith("--host-")),
      CONTAINER.args,
    );
    assert.deepEqual(rendered.docs.map((d) => d.kind).sort(), BASE.docs.map((d) => d.kind).sort());
  },
);
