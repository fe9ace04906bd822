/**
 * The kinds of pod source the daemon can run: the container runtime (CRI),
 * the local kubelet's `/pods`, the API server (the node's pods, watched), a static manifest directory, and the fake
 * (scripted or simulated) source. Every stage names sources by these.
 *
 * @module
 */

/** The kinds of pod source the daemon can run. */
export type PodSourceKind = "cri" | "kubelet" | "apiserver" | "static" | "fake";
