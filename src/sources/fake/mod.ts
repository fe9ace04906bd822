/**
 * The fake pod source: scriptable, for tests and benchmarks (the simulated
 * node's source is the simulator's, in `src/sim/`).
 *
 * @module
 */

export { FakePodSource, type FakePodSourceOptions } from "./fake_source.ts";
