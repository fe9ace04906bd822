/**
 * The simulated CRI runtime: an in-process `runtime.v1.RuntimeService`
 * ({@linkcode SimCriRuntime}), its gRPC server on a socket, the kubelet-side
 * calls that create pods in it, and the bridge that keeps it in step with a
 * simulated node.
 *
 * @module
 */

export {
  type SimContainer,
  SimCriRuntime,
  type SimCriRuntimeOptions,
  type SimSandbox,
} from "./cri_runtime.ts";
export { SIM_CGROUP_ROOT, SimProcFs } from "./sim_procfs.ts";
export { CriServer, type CriServerOptions, startCriServer } from "./cri_server.ts";
export {
  kubeletContainerConfig,
  type KubeletContainerSpec,
  type KubeletPodHandle,
  type KubeletPodSpec,
  kubeletSandboxConfig,
  removeKubeletPod,
  runKubeletPod,
  startKubeletContainer,
} from "./cri_kubelet.ts";
export {
  SimCriBridge,
  type SimCriBridgeOptions,
  type SimCriSyncResult,
  SimulatedRuntime,
  startSimulatedRuntime,
  type StartSimulatedRuntimeOptions,
} from "./sim_cri_bridge.ts";
