/**
 * The name the simulated CRI runtime gives itself in its Version answer,
 * which the CRI source uses as the scheme of container IDs: simulated
 * containers read `pods-api-simulated://<id>`, never as a real runtime's.
 *
 * @module
 */

/** `runtimeName` of the simulated runtime's Version, the scheme of its container IDs. */
export const SIMULATED_RUNTIME_NAME = "pods-api-simulated";
