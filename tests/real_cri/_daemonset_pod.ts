/**
 * Turns `deploy/base/daemonset.yaml` into the CRI calls the kubelet makes for its
 * pod, so that the real-runtime image test runs exactly what the manifest
 * says: the same args (with `$(VAR)` expanded from `env`), env, mounts
 * (each hostPath volume mapped to a test directory standing in for the
 * node's path), securityContext, memory limit and host network.
 *
 * Only the metrics port may be substituted (the test machine's 9469 may be
 * taken); {@linkcode DaemonSetPod.substitutions} lists what was, so the
 * checks can allow exactly that.
 *
 * @module
 */

import { parse } from "yaml";
import type { ContainerConfig, MessageInit, PodSandboxConfig } from "../../src/sources/cri/mod.ts";
import { KUBELET_ANNOTATION, KUBELET_LABEL } from "../../src/model/kubelet_keys.ts";
import { NAMESPACE_MODE } from "../../src/sources/cri/mod.ts";

/** The parts of the DaemonSet the test maps to CRI. */
export interface DaemonSetDoc {
  spec: {
    template: {
      metadata: { labels?: Record<string, string> };
      spec: {
        hostNetwork?: boolean;
        terminationGracePeriodSeconds?: number;
        initContainers?: DaemonSetContainer[];
        containers: DaemonSetContainer[];
        volumes: {
          name: string;
          hostPath?: { path: string; type?: string };
          emptyDir?: Record<string, unknown>;
          configMap?: { name: string };
        }[];
      };
    };
  };
}

/** The DaemonSet's container. */
export interface DaemonSetContainer {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  env?: { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
  resources?: { limits?: Record<string, string> };
  securityContext: {
    runAsUser?: number;
    runAsGroup?: number;
    privileged?: boolean;
    allowPrivilegeEscalation?: boolean;
    readOnlyRootFilesystem?: boolean;
    capabilities?: { drop?: string[]; add?: string[] };
    seccompProfile?: { type: string };
  };
  volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[];
}

/** Reads and parses `deploy/base/daemonset.yaml`. */
export async function readDaemonSet(): Promise<DaemonSetDoc> {
  const url = new URL("../../deploy/base/daemonset.yaml", import.meta.url);
  return parse(await Deno.readTextFile(url)) as DaemonSetDoc;
}

/**
 * The config maps the base's kustomization generates, by name: each file
 * under its key, as the kubelet would project them.
 *
 * @returns Name to key to content.
 */
export async function readConfigMaps(): Promise<Record<string, Record<string, string>>> {
  const base = new URL("../../deploy/base/", import.meta.url);
  const k = parse(await Deno.readTextFile(new URL("kustomization.yaml", base))) as {
    configMapGenerator?: { name: string; files?: string[] }[];
  };
  const out: Record<string, Record<string, string>> = {};
  for (const gen of k.configMapGenerator ?? []) {
    const data: Record<string, string> = {};
    for (const entry of gen.files ?? []) {
      const [key, path] = entry.includes("=") ? entry.split("=", 2) : [entry, entry];
      data[key!.split("/").at(-1)!] = await Deno.readTextFile(new URL(path!, base));
    }
    out[gen.name] = data;
  }
  return out;
}

/** Options of {@linkcode daemonSetPod}. */
export interface DaemonSetPodOptions {
  /** The node's name (`spec.nodeName`, the `fieldRef` the env reads). */
  nodeName: string;
  /** Test directory standing in for each hostPath volume's node path. */
  hostPaths: Record<string, string>;
  /** Directory for emptyDir and configMap volumes (one subdirectory each). */
  emptyDirRoot: string;
  /** Each config map's files by name ({@linkcode readConfigMaps}). */
  configMaps: Readonly<Record<string, Readonly<Record<string, string>>>>;
  /** The metrics port to use instead of the manifest's (a free one). */
  metricsPort: number;
  /** Pod UID and the kubelet's log root. */
  uid: string;
  logRoot: string;
}

/** The CRI configs of the DaemonSet's pod, and what was substituted. */
export interface DaemonSetPod {
  readonly container: DaemonSetContainer;
  readonly sandbox: MessageInit<PodSandboxConfig>;
  readonly config: MessageInit<ContainerConfig>;
  /** The init containers, in order: each runs to completion before the daemon starts. */
  readonly inits: readonly {
    readonly container: DaemonSetContainer;
    readonly config: MessageInit<ContainerConfig>;
  }[];
  /** The args as the kubelet passes them (env expanded), before substitution. */
  readonly manifestArgs: readonly string[];
  /** `[manifest value, value run]` of each argument that differs. */
  readonly substitutions: readonly [string, string][];
  /** hostPath (node path) to the directory mounted instead. */
  readonly hostPaths: Readonly<Record<string, string>>;
  /** Volume name to the directory the container gets. */
  readonly volumeSources: Readonly<Record<string, string>>;
  /** Files to write before the container starts (config map volumes), by path. */
  readonly files: Readonly<Record<string, string>>;
}

const QUANTITY = /^(\d+)(Ki|Mi|Gi)?$/;

function bytes(quantity: string): number {
  const m = QUANTITY.exec(quantity);
  if (!m) throw new RangeError(`Cannot parse memory quantity "${quantity}"`);
  return Number(m[1]) * ({ Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30 }[m[2] ?? ""] ?? 1);
}

/**
 * The kubelet's CRI configs for the DaemonSet's (only) container.
 *
 * @param doc The parsed DaemonSet.
 * @param options Node name, hostPath stand-ins, metrics port, UID.
 * @returns Sandbox and container configs, and what was substituted.
 * @throws {Error} When a hostPath volume has no stand-in, or `$(VAR)` is undefined.
 */
export function daemonSetPod(doc: DaemonSetDoc, options: DaemonSetPodOptions): DaemonSetPod {
  const pod = doc.spec.template.spec;
  const container = pod.containers[0]!;
  const env = containerEnv(container, options.nodeName);
  const manifestArgs = expandArgs(container, env);
  const substitutions: [string, string][] = [];
  const args = manifestArgs.map((a) => {
    const m = /^(--metrics-bind-address=.*:)(\d+)$/.exec(a);
    if (!m) return a;
    const run = `${m[1]}${options.metricsPort}`;
    if (run !== a) substitutions.push([a, run]);
    return run;
  });
  const volumeSources: Record<string, string> = {};
  const files: Record<string, string> = {};
  for (const v of pod.volumes) {
    if (v.hostPath) {
      const source = options.hostPaths[v.hostPath.path];
      if (source === undefined) throw new Error(`No stand-in for hostPath "${v.hostPath.path}"`);
      volumeSources[v.name] = source;
    } else if (v.emptyDir) {
      volumeSources[v.name] = `${options.emptyDirRoot}/${v.name}`;
    } else if (v.configMap) {
      const data = options.configMaps[v.configMap.name];
      if (data === undefined) throw new Error(`No config map "${v.configMap.name}"`);
      volumeSources[v.name] = `${options.emptyDirRoot}/${v.name}`;
      for (const [key, text] of Object.entries(data)) {
        files[`${options.emptyDirRoot}/${v.name}/${key}`] = text;
      }
    } else {
      throw new Error(`Volume "${v.name}": only hostPath, emptyDir and configMap are mapped`);
    }
  }
  const name = "pods-api-image-test";
  const namespace = "kube-system";
  const mode = pod.hostNetwork ? NAMESPACE_MODE.node : NAMESPACE_MODE.pod;
  const sandbox: MessageInit<PodSandboxConfig> = {
    metadata: { name, namespace, uid: options.uid, attempt: 0 },
    hostname: pod.hostNetwork ? "" : name,
    logDirectory: `${options.logRoot}/${namespace}_${name}_${options.uid}`,
    labels: {
      ...doc.spec.template.metadata.labels,
      [KUBELET_LABEL.podName]: name,
      [KUBELET_LABEL.podNamespace]: namespace,
      [KUBELET_LABEL.podUid]: options.uid,
    },
    annotations: { "kubernetes.io/config.source": "api" },
    linux: {
      cgroupParent: "",
      securityContext: {
        namespaceOptions: { network: mode, pid: NAMESPACE_MODE.container, ipc: mode },
      },
    },
  };
  const names = { name, namespace, uid: options.uid };
  const config = containerConfig(pod, container, { env, args, volumeSources, ...names });
  const inits = (pod.initContainers ?? []).map((init) => {
    const initEnv = containerEnv(init, options.nodeName);
    const initArgs = expandArgs(init, initEnv);
    return {
      container: init,
      config: containerConfig(pod, init, {
        env: initEnv,
        args: initArgs,
        volumeSources,
        ...names,
      }),
    };
  });
  return {
    container,
    sandbox,
    config,
    inits,
    manifestArgs,
    substitutions,
    hostPaths: options.hostPaths,
    volumeSources,
    files,
  };
}

/** The container's environment, the downward API's node name filled in. */
function containerEnv(container: DaemonSetContainer, nodeName: string): Map<string, string> {
  const env = new Map<string, string>();
  for (const e of container.env ?? []) {
    if (e.value !== undefined) env.set(e.name, e.value);
    else if (e.valueFrom?.fieldRef?.fieldPath === "spec.nodeName") env.set(e.name, nodeName);
    else throw new Error(`env "${e.name}": only values and spec.nodeName are mapped`);
  }
  return env;
}

/** The container's args with `$(VAR)` expanded from its env, as the kubelet does. */
function expandArgs(container: DaemonSetContainer, env: ReadonlyMap<string, string>): string[] {
  return (container.args ?? []).map((a) =>
    a.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (_, name: string) => {
      const value = env.get(name);
      if (value === undefined) throw new Error(`$(${name}) is not defined in env`);
      return value;
    })
  );
}

/** The kubelet's CRI config of one of the pod's containers. */
function containerConfig(
  pod: DaemonSetDoc["spec"]["template"]["spec"],
  container: DaemonSetContainer,
  c: {
    env: ReadonlyMap<string, string>;
    args: readonly string[];
    volumeSources: Readonly<Record<string, string>>;
    name: string;
    namespace: string;
    uid: string;
  },
): MessageInit<ContainerConfig> {
  const security = container.securityContext;
  const limit = container.resources?.limits?.memory;
  return {
    metadata: { name: container.name, attempt: 0 },
    image: { image: container.image, userSpecifiedImage: container.image },
    command: container.command ?? [],
    args: c.args,
    envs: [...c.env].map(([key, value]) => ({ key, value })),
    mounts: container.volumeMounts.map((m) => ({
      containerPath: m.mountPath,
      hostPath: c.volumeSources[m.name]!,
      readonly: m.readOnly === true,
    })),
    labels: {
      [KUBELET_LABEL.podName]: c.name,
      [KUBELET_LABEL.podNamespace]: c.namespace,
      [KUBELET_LABEL.podUid]: c.uid,
      [KUBELET_LABEL.containerName]: container.name,
    },
    annotations: {
      [KUBELET_ANNOTATION.restartCount]: "0",
      [KUBELET_ANNOTATION.podTerminationGracePeriod]: String(
        pod.terminationGracePeriodSeconds ?? 30,
      ),
    },
    logPath: `${container.name}/0.log`,
    linux: {
      resources: limit === undefined
        ? null
        : { memoryLimitInBytes: bytes(limit), memorySwapLimitInBytes: bytes(limit) },
      securityContext: {
        capabilities: {
          addCapabilities: security.capabilities?.add ?? [],
          dropCapabilities: security.capabilities?.drop ?? [],
        },
        privileged: security.privileged === true,
        runAsUser: security.runAsUser === undefined ? null : { value: security.runAsUser },
        runAsGroup: security.runAsGroup === undefined ? null : { value: security.runAsGroup },
        readonlyRootfs: security.readOnlyRootFilesystem === true,
        noNewPrivs: security.allowPrivilegeEscalation === false,
        seccomp: security.seccompProfile?.type === "RuntimeDefault"
          ? { profileType: 0 }
          : { profileType: 1 },
      },
    },
  };
}
