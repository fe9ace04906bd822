/**
 * The Kubernetes-compatible HTTP surface: `/pods` and the API server's pod
 * read paths, discovery and `Table` output, over the query engine.
 *
 * @module
 */

export {
  type KubeApiServerDeps,
  type KubeApiServerOptions,
  type RunningKubeApi,
  serveKubeApi,
} from "./kube_api_server.ts";
export { humanDuration, POD_COLUMNS, type PodRow, printPod } from "./pod_printer.ts";
export { podItemJson, podObjectJson, statusObject } from "./api_objects.ts";
