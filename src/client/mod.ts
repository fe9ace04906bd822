/**
 * The pods-api client library: a connection to the daemon's socket (or a
 * kubelet's Pods API socket), every call of `v1alpha1.Pods`, the
 * package-less `Pods` and `podsapi.v1.PodQuery`, and a {@linkcode PodInformer}
 * that lists, watches, keeps a local store, resumes from its last token and
 * reconnects with jittered backoff.
 *
 * @example An informer in a node agent
 * ```ts
 * import { PodInformer, PodsClient } from "@pods-api/pods-api/client";
 *
 * using client = new PodsClient({ socket: "/run/pods-api/pods-api.sock" });
 * const informer = new PodInformer(client, { fields: ["status.phase", "status.podIP"] });
 * informer.addEventHandler({
 *   onAdd: (pod) => console.log("+", pod.metadata.namespace, pod.metadata.name),
 *   onUpdate: (_old, pod) => console.log("~", pod.metadata.name, pod.status?.phase),
 *   onDelete: (pod) => console.log("-", pod.metadata.name),
 * });
 * const stop = new AbortController();
 * Deno.addSignalListener("SIGINT", () => stop.abort());
 * await informer.run(stop.signal);
 * ```
 *
 * @example One-shot calls
 * ```ts
 * import { PodsClient } from "@pods-api/pods-api/client";
 * using client = new PodsClient();
 * const pods = await client.listPods({ fields: ["metadata.labels"] });
 * const pod = await client.getPod(pods[0]!.metadata.uid);
 * ```
 *
 * @module
 */

export { Backoff, type BackoffOptions } from "./backoff.ts";
export {
  CONNECT_FAILURE,
  type ConnectFailure,
  diagnoseSocket,
  PodsApiConnectError,
} from "./connect_error.ts";
export {
  type InformerApi,
  type InformerRetry,
  type InformerStats,
  type PodEventHandler,
  PodInformer,
  type PodInformerOptions,
} from "./pod_informer.ts";
export {
  type NodeDevicesInfo,
  type PodKey,
  PodQueryClient,
  type PodResourcesInfo,
  type PodSelection,
  type QueryCallOptions,
  type QueryEventName,
  type QueryWatchEvent,
  type QueryWatchOptions,
} from "./pod_query_client.ts";
export { DEFAULT_SOCKET, defaultSocket, KUBELET_SOCKET } from "./default_socket.ts";
export {
  type PodEventType,
  type PodsCallOptions,
  PodsClient,
  type PodsClientOptions,
  type PodsServiceName,
  type PodWatchEvent,
  RateLimitedError,
} from "./pods_client.ts";
export {
  DEFAULT_CONFIG_FILE,
  type ResolvedSocket,
  resolveSocket,
  type ResolveSocketOptions,
  SOCKET_ENV,
  type SocketOrigin,
} from "./socket_path.ts";
export { GrpcError, STATUS, type StatusCode } from "../grpc/status.ts";
export { SelectorError } from "../query/mod.ts";
export type { PodMetadata, PodObject, PodUid } from "../model/pod.ts";
export type { JsonObject, JsonValue } from "../model/json.ts";
export type { GetKeyMessage, SelectorMessage } from "../proto/mod.ts";
export type { Sleep } from "../sleep.ts";
