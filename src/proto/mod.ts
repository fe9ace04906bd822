/**
 * The protobuf side of pods-api: the `v1.Pod` codec (Kubernetes JSON ⇄
 * Kubernetes protobuf bytes), the field-mask schema of a pod, the framing of
 * the Pods API messages around pre-encoded pods, and the embedded descriptor
 * for clients that load the schema with `@grpc/proto-loader`'s `fromJSON`.
 *
 * @module
 */

export { decodePod, encodePod, InvalidQuantityError } from "./pod_codec.ts";
export { unrepresentablePaths } from "./pod_checker.ts";
export { POD_SCHEMA } from "./pod_schema.ts";
export {
  decodeGetPodRequest,
  decodeGetPodResponse,
  decodeListPodsResponse,
  decodePodWatchResponse,
  decodeWatchPodsEvent,
  encodeGetPodRequest,
  encodeListPodsResponse,
  encodeWatchPodsEvent,
  getPodResponseHead,
  podWatchResponseHead,
  WATCH_EVENT_TYPE,
  type WatchEventType,
  type WatchPodsEvent,
  watchPodsEventHead,
} from "./pods_api_wire.ts";
export { POD_TYPE_NAME, podsApiSchema } from "./load.ts";
export { PODS_API_DESCRIPTOR } from "./generated/descriptor.ts";
export {
  decodeGetRequest,
  decodeGetResponse as decodeQueryGetResponse,
  decodeListRequest,
  decodeListResponse,
  decodeWatchEvent,
  decodeWatchRequest,
  encodeGetRequest,
  encodeGetResponse as encodeQueryGetResponse,
  encodeListRequest,
  encodeListResponse,
  encodeWatchEvent,
  encodeWatchRequest,
  type GetKeyMessage,
  type GetRequestMessage,
  type GetResponseMessage,
  type ListRequestMessage,
  type ListResponseMessage,
  type ProcessContainerMessage,
  QUERY_EVENT_TYPE,
  type QueryEventType,
  type SelectorMessage,
  type WatchEventMessage,
  type WatchRequestMessage,
} from "./pod_query_wire.ts";
export {
  decodeListDevicesRequest,
  decodeListDevicesResponse,
  decodePodResourcesMessage,
  encodeListDevicesRequest,
  encodeListDevicesResponse,
  encodePodResourcesMessage,
  type ListDevicesResponseMessage,
  type NodeDeviceMessage,
  type PodResourcesMessage,
} from "./pod_query_resources_wire.ts";
