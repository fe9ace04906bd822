/**
 * The simulated node: realistic, deterministic pods that change over clock
 * time, plus a fake clock to drive it.
 *
 * @module
 */

export {
  DEFAULT_NAMESPACES,
  MUTATION_KINDS,
  type MutationKind,
  SimulatedNode,
  type SimulatedNodeOptions,
} from "./simulated_node.ts";
export {
  SimCriBridge,
  type SimCriBridgeOptions,
  type SimCriSyncResult,
  SimulatedRuntime,
  startSimulatedRuntime,
  type StartSimulatedRuntimeOptions,
} from "./sim_cri_bridge.ts";
