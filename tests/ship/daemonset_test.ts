/**
 * deploy/daemonset.yaml: its arguments are real `serve` flags, and its mounts
 * and probes agree with them (socket directory mounted read-write at the same
 * path as on the node, everything else read-only, probes on the metrics port).
 *
 * @module
 */

import assert from "node:assert/strict";
import { dirname } from "node:path";
import { parse } from "yaml";
import { CRI_SOCKETS, DEFAULT_SOCKET_DIR } from "../../scripts/_permissions.ts";
import { DEFAULT_IMAGE_NAME } from "../../scripts/image.ts";
import { checkServeArgs } from "./_serve_args.ts";

interface HostPathVolume {
  name: string;
  hostPath?: { path: string; type?: string };
  emptyDir?: Record<string, unknown>;
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
  env?: { name: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
  livenessProbe: Probe;
  readinessProbe: Probe;
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
        containers: Container[];
        volumes: HostPathVolume[];
      };
    };
  };
}

const DOC = parse(
  await Deno.readTextFile(new URL("../../deploy/daemonset.yaml", import.meta.url)),
) as DaemonSet;
const POD = DOC.spec.template.spec;
const CONTAINER = POD.containers[0]!;

/** The container's arguments as the kubelet passes them ($(VAR) from env). */
function expandedArgs(): string[] {
  const vars = new Map<string, string>();
  for (const e of CONTAINER.env ?? []) {
    if (e.valueFrom?.fieldRef?.fieldPath === "spec.nodeName") vars.set(e.name, "node-1");
  }
  return CONTAINER.args.map((a) =>
    a.replace(/\$\(([A-Z_]+)\)/g, (_, name: string) => {
      assert.ok(vars.has(name), `$(${name}) is defined in env`);
      return vars.get(name)!;
    })
  );
}

const ARGS = expandedArgs();
const CONFIG = checkServeArgs(ARGS.slice(1));

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

Deno.test("daemonset.yaml runs serve of the image deno task image builds", () => {
  assert.equal(DOC.kind, "DaemonSet");
  assert.equal(DOC.metadata.namespace, "kube-system");
  assert.equal(CONTAINER.image, DEFAULT_IMAGE_NAME);
  // The image's entrypoint carries Deno's permission flags: a command would drop them.
  assert.equal(CONTAINER.command, undefined);
  assert.equal(ARGS[0], "serve");
  assert.equal(CONFIG.nodeName, "node-1");
  assert.equal(CONFIG.simulate, false);
});

Deno.test("daemonset.yaml mounts the socket's directory read-write at its node path", () => {
  const socketDir = dirname(CONFIG.socket);
  assert.equal(socketDir, DEFAULT_SOCKET_DIR, "the executable may write only there");
  const { mount, hostPath } = mountFor(CONFIG.socket);
  assert.equal(mount.mountPath, socketDir, "the directory is mounted, not the socket");
  assert.notEqual(mount.readOnly, true);
  assert.equal(hostPath, CONFIG.socket, "node agents find the socket at the same path");
});

Deno.test("daemonset.yaml mounts the CRI socket's directory read-only", () => {
  const path = new URL(CONFIG.runtimeEndpoint).pathname;
  assert.ok(CRI_SOCKETS.includes(path), `the executable may connect to "${path}"`);
  const { mount, hostPath } = mountFor(path);
  assert.equal(mount.mountPath, dirname(path));
  assert.equal(mount.readOnly, true);
  assert.equal(hostPath, path);
});

Deno.test("daemonset.yaml mounts manifests read-only, and nothing its flags do not use", async (t) => {
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
      if (volume?.hostPath && m.mountPath !== DEFAULT_SOCKET_DIR) {
        assert.equal(m.readOnly, true, m.mountPath);
      }
    }
  });
});

Deno.test("daemonset.yaml probes /healthz and /readyz on the metrics address", async (t) => {
  const cases = [
    { name: "liveness", probe: CONTAINER.livenessProbe, path: "/healthz" },
    { name: "readiness", probe: CONTAINER.readinessProbe, path: "/readyz" },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
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

Deno.test("daemonset.yaml sets requests and limits and drops privileges", () => {
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
