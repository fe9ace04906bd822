/**
 * The simulated node: realistic, deterministic pods that start, run, restart,
 * finish and go away over clock time, as a kubelet would report them, and a
 * pod source over it.
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
export { SimulatedPodSource, type SimulatedPodSourceOptions } from "./simulated_pod_source.ts";
