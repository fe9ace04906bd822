/**
 * The simulator, a leaf of the module graph that only `main.ts`, tests and
 * benchmarks wire: a simulated node (`node/`: pods over clock time, and a
 * pod source over them) and a simulated CRI runtime (`runtime/`: an
 * in-process runtime, its socket, and the bridge that runs the node's pods
 * in it), read by the same CRI client and relist code as a real node.
 *
 * @module
 */

export * from "./node/mod.ts";
export * from "./runtime/mod.ts";
export { simulatedSources } from "./simulated_sources.ts";
export { SIMULATED_RUNTIME_NAME } from "./simulated_runtime_name.ts";
