/**
 * The API server as a node-scoped pod source (DESIGN.md §17): its connection
 * (kubeconfig or in-cluster), its small client, and the list + watch source.
 *
 * @module
 */

export {
  ApiServerPodSource,
  type ApiServerPodSourceOptions,
  type ApiServerSourceMetrics,
  DEFAULT_MIN_WATCH_TIMEOUT_S,
  DEFAULT_PAGE_SIZE,
  DEFAULT_REQUEST_TIMEOUT_MS,
  DEFAULT_WATCH_GRACE_MS,
} from "./apiserver_source.ts";
export {
  ApiServerClient,
  type ApiServerClientOptions,
  ApiServerError,
  type ApiServerFailure,
  parseRetryAfter,
  type PodVerb,
} from "./client.ts";
export {
  type ApiServerConnection,
  IN_CLUSTER_CA_FILE,
  IN_CLUSTER_TOKEN_FILE,
  inClusterConnection,
  type InClusterEnvironment,
  joinHostPort,
  type PemSource,
  type TokenSource,
} from "./connection.ts";
export { apiServerConnectionOf, IN_CLUSTER } from "./from_flags.ts";
export { kubeconfigConnection, type KubeconfigOptions } from "./kubeconfig.ts";
