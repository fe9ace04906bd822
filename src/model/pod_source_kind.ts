/**
 * The kinds of pod source the daemon can run: the container runtime (CRI),
 * the kubelet's own Pods API (`WatchPods` on its socket), the local kubelet's `/pods`, the
 * API server (the node's pods, watched), a static manifest directory, and the fake
 * (scripted or simulated) source. Every stage names sources by these.
 *
 * @module
 */

/** The kinds of pod source the daemon can run. */
export type PodSourceKind =
  | "cri"
  | "kubelet-podsapi"
  | "kubelet"
  | "apiserver"
  | "static"
  | "fake";
