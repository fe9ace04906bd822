/**
 * The kubelet's podresources API as a source of what pods hold (devices,
 * exclusive CPUs, memory, DRA claims): a client on the project's gRPC layer,
 * its codec, and the loop that polls it. Not a pod source: it never adds or
 * removes pods, and the daemon's sync gate does not wait for it.
 *
 * @module
 */

export {
  DEFAULT_POD_RESOURCES_ENDPOINT,
  type PodResourcesApi,
  type PodResourcesCallOptions,
  PodResourcesClient,
  podResourcesSocketPath,
} from "./client.ts";
export {
  decodeAllocatableResourcesResponse,
  decodeGetPodResourcesResponse,
  decodeListPodResourcesResponse,
  encodeGetPodResourcesRequest,
  PODRESOURCES_METHODS,
} from "../../proto/podresources_wire.ts";
export {
  ALLOCATABLE_PERIOD_MS,
  MIN_POLL_PERIOD_MS,
  PodResourcesPoller,
  type PodResourcesPollerOptions,
  type PodResourcesSink,
  type PollOutcome,
  type PollResult,
} from "./podresources_poller.ts";
