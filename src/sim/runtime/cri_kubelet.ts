/**
 * Creates pods on a CRI runtime the way the kubelet does: the same sandbox
 * and container labels and annotations (`kuberuntime/labels.go`), attempts,
 * log paths and resource limits. Works against any {@linkcode RuntimeService}:
 * the simulated runtime (tests, demo, benchmarks) or a real containerd
 * (the real-runtime tests).
 *
 * @module
 */

import { KUBELET_ANNOTATION, KUBELET_LABEL } from "../../model/kubelet_keys.ts";
import {
  type ContainerConfig,
  type MessageInit,
  NAMESPACE_MODE,
  type PodSandboxConfig,
  type RuntimeService,
} from "../../sources/cri/mod.ts";

/** The pod-level facts the kubelet passes to the runtime. */
export interface KubeletPodSpec {
  name: string;
  /** @default {"default"} */
  namespace?: string;
  uid: string;
  /** The pod's own labels. */
  labels?: Record<string, string>;
  /** The pod's annotations (the sandbox carries them as they are). */
  annotations?: Record<string, string>;
  hostNetwork?: boolean;
  terminationGracePeriodSeconds?: number;
  /** Root of pod log directories (the kubelet's `/var/log/pods`); none when omitted. */
  logRoot?: string;
}

/** One container of a pod, as the kubelet would create it. */
export interface KubeletContainerSpec {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  ports?: { containerPort: number; protocol?: "TCP" | "UDP" | "SCTP"; name?: string }[];
  /** `resources.limits.memory` in bytes (swap limited to the same, as the kubelet does). */
  memoryLimitBytes?: number;
  /** @default {"container"} */
  type?: "init" | "container";
}

function logDirectory(pod: KubeletPodSpec): string {
  return pod.logRoot === undefined
    ? ""
    : `${pod.logRoot}/${pod.namespace ?? "default"}_${pod.name}_${pod.uid}`;
}

/**
 * The `PodSandboxConfig` the kubelet sends for a pod.
 *
 * @param pod The pod.
 * @param attempt The sandbox attempt (0 for the first sandbox).
 * @returns The config.
 */
export function kubeletSandboxConfig(
  pod: KubeletPodSpec,
  attempt = 0,
): MessageInit<PodSandboxConfig> {
  const namespace = pod.namespace ?? "default";
  const mode = pod.hostNetwork ? NAMESPACE_MODE.node : NAMESPACE_MODE.pod;
  return {
    metadata: { name: pod.name, namespace, uid: pod.uid, attempt },
    hostname: pod.hostNetwork ? "" : pod.name,
    logDirectory: logDirectory(pod),
    labels: {
      ...pod.labels,
      [KUBELET_LABEL.podName]: pod.name,
      [KUBELET_LABEL.podNamespace]: namespace,
      [KUBELET_LABEL.podUid]: pod.uid,
    },
    annotations: { ...pod.annotations },
    linux: {
      cgroupParent: "",
      securityContext: {
        namespaceOptions: { network: mode, pid: NAMESPACE_MODE.container, ipc: mode },
      },
    },
  };
}

/**
 * The `ContainerConfig` the kubelet sends for one container instance.
 *
 * @param pod The pod.
 * @param container The container.
 * @param attempt The instance's attempt, which is also its restart count.
 * @returns The config.
 */
export function kubeletContainerConfig(
  pod: KubeletPodSpec,
  container: KubeletContainerSpec,
  attempt = 0,
): MessageInit<ContainerConfig> {
  const annotations: Record<string, string> = {
    [KUBELET_ANNOTATION.containerHash]: (attempt + 0x5eed).toString(16),
    [KUBELET_ANNOTATION.restartCount]: String(attempt),
    [KUBELET_ANNOTATION.terminationMessagePath]: "/dev/termination-log",
    [KUBELET_ANNOTATION.terminationMessagePolicy]: "File",
    [KUBELET_ANNOTATION.containerType]: container.type ?? "container",
  };
  if (pod.terminationGracePeriodSeconds !== undefined) {
    annotations[KUBELET_ANNOTATION.podTerminationGracePeriod] = String(
      pod.terminationGracePeriodSeconds,
    );
  }
  if (container.ports !== undefined && container.ports.length > 0) {
    annotations[KUBELET_ANNOTATION.ports] = JSON.stringify(
      container.ports.map((p) => ({ ...p, protocol: p.protocol ?? "TCP" })),
    );
  }
  const limit = container.memoryLimitBytes;
  return {
    metadata: { name: container.name, attempt },
    image: { image: container.image, userSpecifiedImage: container.image },
    command: container.command ?? [],
    args: container.args ?? [],
    labels: {
      [KUBELET_LABEL.podName]: pod.name,
      [KUBELET_LABEL.podNamespace]: pod.namespace ?? "default",
      [KUBELET_LABEL.podUid]: pod.uid,
      [KUBELET_LABEL.containerName]: container.name,
    },
    annotations,
    logPath: pod.logRoot === undefined ? "" : `${container.name}/${attempt}.log`,
    linux: limit === undefined
      ? null
      : { resources: { memoryLimitInBytes: limit, memorySwapLimitInBytes: limit } },
  };
}

/** What {@linkcode runKubeletPod} created. */
export interface KubeletPodHandle {
  readonly sandboxId: string;
  /** Container ID by container name. */
  readonly containerIds: Record<string, string>;
}

/**
 * Runs a pod as the kubelet does: RunPodSandbox, then CreateContainer and
 * StartContainer for each container in order.
 *
 * @param runtime The runtime.
 * @param pod The pod and its containers.
 * @returns The sandbox and container IDs.
 * @throws {CriCallError} When a runtime call fails.
 */
export async function runKubeletPod(
  runtime: RuntimeService,
  pod: KubeletPodSpec & { containers: readonly KubeletContainerSpec[] },
): Promise<KubeletPodHandle> {
  const sandboxConfig = kubeletSandboxConfig(pod);
  const { podSandboxId } = await runtime.runPodSandbox({ config: sandboxConfig });
  const containerIds: Record<string, string> = {};
  for (const container of pod.containers) {
    containerIds[container.name] = await startKubeletContainer(runtime, podSandboxId, {
      pod,
      container,
    });
  }
  return { sandboxId: podSandboxId, containerIds };
}

/**
 * Creates and starts one container instance (a new attempt restarts it).
 *
 * @param runtime The runtime.
 * @param sandboxId The pod's sandbox.
 * @param options The pod, the container and the attempt (default 0).
 * @returns The new container's ID.
 * @throws {CriCallError} When a runtime call fails.
 */
export async function startKubeletContainer(
  runtime: RuntimeService,
  sandboxId: string,
  options: { pod: KubeletPodSpec; container: KubeletContainerSpec; attempt?: number },
): Promise<string> {
  const { containerId } = await runtime.createContainer({
    podSandboxId: sandboxId,
    config: kubeletContainerConfig(options.pod, options.container, options.attempt ?? 0),
    sandboxConfig: kubeletSandboxConfig(options.pod),
  });
  await runtime.startContainer({ containerId });
  return containerId;
}

/**
 * Removes a pod as the kubelet does: StopPodSandbox, then RemovePodSandbox.
 *
 * @param runtime The runtime.
 * @param sandboxId The pod's sandbox.
 * @throws {CriCallError} When a runtime call fails.
 */
export async function removeKubeletPod(runtime: RuntimeService, sandboxId: string): Promise<void> {
  await runtime.stopPodSandbox({ podSandboxId: sandboxId });
  await runtime.removePodSandbox({ podSandboxId: sandboxId });
}
