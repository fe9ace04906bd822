/**
 * The kubelet pod source: the local kubelet's `/pods`.
 *
 * @module
 */

export {
  DEFAULT_KUBELET_POLL_MS,
  DEFAULT_KUBELET_TIMEOUT_MS,
  DEFAULT_KUBELET_URL,
  DEFAULT_MAX_RESPONSE_BYTES,
  DEFAULT_TOKEN_FILE,
  type KubeletFailureReason,
  KubeletPodSource,
  type KubeletPodSourceOptions,
} from "./kubelet_source.ts";
export { jsonEqual } from "../pod_items.ts";
