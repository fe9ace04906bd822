/**
 * The daemon's data path behind one call: merge -> cache -> query engine ->
 * hub -> gate ({@linkcode PodPipeline}), and the count of what sources send
 * that the served bytes cannot carry.
 *
 * @module
 */

export { PodPipeline, type PodPipelineOptions } from "./pod_pipeline.ts";
export { type JoinResult, MAX_HOLD_BACK, ResourceJoiner } from "./resource_join.ts";
export {
  UnrepresentableCounter,
  type UnrepresentableCounterOptions,
} from "./unrepresentable_counter.ts";
