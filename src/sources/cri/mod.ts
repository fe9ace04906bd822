/**
 * The CRI pod source: the container runtime's `runtime.v1.RuntimeService`
 * (client, endpoint detection), the pure CRI → `v1.Pod` conversion, and the
 * PLEG-style {@linkcode CriPodSource}.
 *
 * @module
 */

export {
  CriClient,
  type CriClientOptions,
  DEFAULT_MAX_MESSAGE_BYTES,
  DEFAULT_RUNTIME_ENDPOINTS,
  DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS,
  type DetectedRuntime,
  detectRuntimeEndpoint,
  type DetectRuntimeOptions,
  parseRuntimeEndpoint,
} from "./client.ts";
export {
  containerIdScheme,
  type ContainerInput,
  type ConvertOptions,
  convertPod,
  type RejectHandler,
  type RejectReason,
  type SandboxInput,
  UNNAMED_RUNTIME,
} from "./convert.ts";
export {
  CriPodSource,
  type CriPodSourceOptions,
  DEFAULT_INSPECT_CONCURRENCY,
  DEFAULT_LIST_CALL_TIMEOUT_MS,
} from "./cri_source.ts";
export {
  RuntimeSocketAccessError,
  runtimeSocketAccessError,
  type SocketDenial,
  socketDenial,
} from "./socket_access.ts";
export { CRI_METHODS, type CriMethodName, RUNTIME_SERVICE_NAME } from "./_service.ts";
export * from "./_types.ts";
