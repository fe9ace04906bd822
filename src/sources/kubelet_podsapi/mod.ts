/**
 * The kubelet's own Pods API (`v1alpha1.Pods/WatchPods` on its socket) as a
 * pod source: full specs and the kubelet's status, pushed as they change.
 *
 * @module
 */

export {
  DEFAULT_RETRY_INITIAL_MS,
  DEFAULT_RETRY_MAX_MS,
  KUBELET_PODS_API_SOCKET,
  type KubeletPodsApiMetrics,
  KubeletPodsApiSource,
  type KubeletPodsApiSourceOptions,
  type KubeletPodsApiState,
  WATCH_PODS_METHOD,
} from "./kubelet_podsapi_source.ts";
export { identityOf, parsePodsApiEndpoint, sameSocket, type SocketIdentity } from "./_endpoint.ts";
