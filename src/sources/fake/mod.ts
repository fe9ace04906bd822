/**
 * Fake pod sources: a scriptable one for tests and one over the simulated node.
 *
 * @module
 */

export { FakePodSource, type FakePodSourceOptions } from "./fake_source.ts";
export { SimulatedPodSource, type SimulatedPodSourceOptions } from "./simulated_source.ts";
