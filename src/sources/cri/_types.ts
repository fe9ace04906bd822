/**
 * TypeScript shapes of the CRI `runtime.v1` messages declared in
 * `proto/cri/api.proto`, as `src/sources/cri/cri_codec.ts` decodes them: camelCase
 * fields, every scalar present, int64 nanosecond times as `number`, enums as
 * numbers, absent sub-messages as `null`. Only the fields pods-api uses.
 *
 * Also the runtime interface the pod source reads through, implemented by
 * {@linkcode CriClient} (gRPC) and by the simulated runtime (in process).
 *
 * @module
 */

import type { MessageInit } from "./cri_codec.ts";

export type { MessageInit };

/** `runtime.v1.PodSandboxState` values. */
export const POD_SANDBOX_STATE = { ready: 0, notReady: 1 } as const;

/** `runtime.v1.ContainerState` values. */
export const CONTAINER_STATE = { created: 0, running: 1, exited: 2, unknown: 3 } as const;

/** `runtime.v1.NamespaceMode` values. */
export const NAMESPACE_MODE = { pod: 0, container: 1, node: 2, target: 3 } as const;

/** `runtime.v1.ContainerEventType` values. */
export const CONTAINER_EVENT_TYPE = { created: 0, started: 1, stopped: 2, deleted: 3 } as const;

/** A map field: `map<string, string>`. */
export type StringMap = Record<string, string>;

/** `VersionRequest`. */
export interface VersionRequest {
  version: string;
}

/** `VersionResponse`. */
export interface VersionResponse {
  version: string;
  runtimeName: string;
  runtimeVersion: string;
  runtimeApiVersion: string;
}

/** `StatusRequest`. */
export interface StatusRequest {
  verbose: boolean;
}

/** `RuntimeCondition`. */
export interface RuntimeCondition {
  type: string;
  status: boolean;
  reason: string;
  message: string;
}

/** `StatusResponse`. */
export interface StatusResponse {
  status: { conditions: RuntimeCondition[] } | null;
  info: StringMap;
}

/** `NamespaceOption`: each a {@linkcode NAMESPACE_MODE} value. */
export interface NamespaceOption {
  network: number;
  pid: number;
  ipc: number;
}

/** `PodSandboxMetadata`. */
export interface PodSandboxMetadata {
  name: string;
  uid: string;
  namespace: string;
  attempt: number;
}

/** `PodSandboxConfig`. */
export interface PodSandboxConfig {
  metadata: PodSandboxMetadata | null;
  hostname: string;
  logDirectory: string;
  labels: StringMap;
  annotations: StringMap;
  linux: {
    cgroupParent: string;
    securityContext: { namespaceOptions: NamespaceOption | null } | null;
  } | null;
}

/** `RunPodSandboxRequest`. */
export interface RunPodSandboxRequest {
  config: PodSandboxConfig | null;
  runtimeHandler: string;
}

/** `RunPodSandboxResponse`. */
export interface RunPodSandboxResponse {
  podSandboxId: string;
}

/** `StopPodSandboxRequest` and `RemovePodSandboxRequest`. */
export interface PodSandboxIdRequest {
  podSandboxId: string;
}

/** The empty responses (`StopPodSandboxResponse`, `StartContainerResponse`, ...). */
export type EmptyResponse = Record<string, never>;

/** `PodSandboxStatusRequest`. */
export interface PodSandboxStatusRequest {
  podSandboxId: string;
  verbose: boolean;
}

/** `PodSandboxNetworkStatus`. */
export interface PodSandboxNetworkStatus {
  ip: string;
  additionalIps: { ip: string }[];
}

/** `PodSandboxStatus`. */
export interface PodSandboxStatus {
  id: string;
  metadata: PodSandboxMetadata | null;
  /** A {@linkcode POD_SANDBOX_STATE} value. */
  state: number;
  /** Nanoseconds since the epoch. */
  createdAt: number;
  network: PodSandboxNetworkStatus | null;
  linux: { namespaces: { options: NamespaceOption | null } | null } | null;
  labels: StringMap;
  annotations: StringMap;
  runtimeHandler: string;
}

/** `PodSandboxStatusResponse`. */
export interface PodSandboxStatusResponse {
  status: PodSandboxStatus | null;
}

/** `PodSandboxFilter`. */
export interface PodSandboxFilter {
  id: string;
  state: { state: number } | null;
  labelSelector: StringMap;
}

/** `ListPodSandboxRequest`. */
export interface ListPodSandboxRequest {
  filter: PodSandboxFilter | null;
}

/** `PodSandbox`: one item of `ListPodSandbox`. */
export interface PodSandbox {
  id: string;
  metadata: PodSandboxMetadata | null;
  /** A {@linkcode POD_SANDBOX_STATE} value. */
  state: number;
  /** Nanoseconds since the epoch. */
  createdAt: number;
  labels: StringMap;
  annotations: StringMap;
  runtimeHandler: string;
}

/** `ListPodSandboxResponse`. */
export interface ListPodSandboxResponse {
  items: PodSandbox[];
}

/** `ImageSpec`. */
export interface ImageSpec {
  image: string;
  userSpecifiedImage: string;
}

/** `ContainerMetadata`. */
export interface ContainerMetadata {
  name: string;
  attempt: number;
}

/** `ContainerConfig`. */
export interface ContainerConfig {
  metadata: ContainerMetadata | null;
  image: ImageSpec | null;
  command: string[];
  args: string[];
  labels: StringMap;
  annotations: StringMap;
  logPath: string;
  /** Set by the real-runtime test that runs the image as the DaemonSet does. */
  workingDir?: string;
  envs?: { key: string; value: string }[];
  mounts?: Mount[];
  linux: {
    resources: { memoryLimitInBytes: number; memorySwapLimitInBytes: number } | null;
    securityContext?: LinuxContainerSecurityContext | null;
  } | null;
}

/** `Mount`: a host path in a container (the fields this project uses). */
export interface Mount {
  containerPath: string;
  hostPath: string;
  readonly: boolean;
}

/** `LinuxContainerSecurityContext` (the fields a pod's securityContext maps to). */
export interface LinuxContainerSecurityContext {
  capabilities: { addCapabilities: string[]; dropCapabilities: string[] } | null;
  privileged: boolean;
  runAsUser: { value: number } | null;
  readonlyRootfs: boolean;
  noNewPrivs: boolean;
  runAsGroup: { value: number } | null;
  /** `profileType`: 0 RuntimeDefault, 1 Unconfined, 2 Localhost. */
  seccomp: { profileType: number; localhostRef: string } | null;
}

/** `CreateContainerRequest`. */
export interface CreateContainerRequest {
  podSandboxId: string;
  config: ContainerConfig | null;
  sandboxConfig: PodSandboxConfig | null;
}

/** `CreateContainerResponse`. */
export interface CreateContainerResponse {
  containerId: string;
}

/** `StartContainerRequest`, `RemoveContainerRequest`. */
export interface ContainerIdRequest {
  containerId: string;
}

/** `StopContainerRequest`. */
export interface StopContainerRequest {
  containerId: string;
  /** Seconds to wait before killing. */
  timeout: number;
}

/** `ContainerFilter`. */
export interface ContainerFilter {
  id: string;
  state: { state: number } | null;
  podSandboxId: string;
  labelSelector: StringMap;
}

/** `ListContainersRequest`. */
export interface ListContainersRequest {
  filter: ContainerFilter | null;
}

/** `Container`: one item of `ListContainers`. */
export interface Container {
  id: string;
  podSandboxId: string;
  metadata: ContainerMetadata | null;
  image: ImageSpec | null;
  imageRef: string;
  /** A {@linkcode CONTAINER_STATE} value. */
  state: number;
  /** Nanoseconds since the epoch. */
  createdAt: number;
  labels: StringMap;
  annotations: StringMap;
  imageId: string;
}

/** `ListContainersResponse`. */
export interface ListContainersResponse {
  containers: Container[];
}

/** `ContainerStatusRequest`. */
export interface ContainerStatusRequest {
  containerId: string;
  verbose: boolean;
}

/** `ContainerStatus`. */
export interface ContainerStatus {
  id: string;
  metadata: ContainerMetadata | null;
  /** A {@linkcode CONTAINER_STATE} value. */
  state: number;
  /** Nanoseconds since the epoch (0: not set). */
  createdAt: number;
  startedAt: number;
  finishedAt: number;
  exitCode: number;
  image: ImageSpec | null;
  imageRef: string;
  reason: string;
  message: string;
  labels: StringMap;
  annotations: StringMap;
  logPath: string;
  imageId: string;
  /** Decoded from real runtimes; the simulated one leaves it out. */
  mounts?: Mount[];
}

/** `ContainerStatusResponse`. */
export interface ContainerStatusResponse {
  status: ContainerStatus | null;
  /** With `verbose`: runtime-specific details (containerd: `info`, the OCI spec as JSON). */
  info?: StringMap;
}

/** `GetEventsRequest`. */
export type GetEventsRequest = Record<string, never>;

/** `ContainerEventResponse`. */
export interface ContainerEventResponse {
  containerId: string;
  /** A {@linkcode CONTAINER_EVENT_TYPE} value. */
  containerEventType: number;
  /** Nanoseconds since the epoch. */
  createdAt: number;
  /**
   * The status of the sandbox the container belongs to (of the sandbox
   * itself, for a sandbox's event), as of `createdAt`; `null` when the
   * runtime sends none (containerd before 1.7, or a sandbox already gone).
   */
  podSandboxStatus: PodSandboxStatus | null;
  /** The statuses of every container of that sandbox, as of `createdAt`. */
  containersStatuses: ContainerStatus[];
}

/** Per-call options of the runtime interface. */
export interface CriCallOptions {
  /** Aborts the call. */
  signal?: AbortSignal;
  /** Deadline of this call in milliseconds (the implementation's default otherwise). */
  timeoutMs?: number;
}

/**
 * Options of `ListPodSandbox` and `ListContainers`: besides the call's own,
 * the items the caller already holds.
 */
export interface CriListOptions<T> extends CriCallOptions {
  /**
   * The item the caller holds for an ID, state and creation time, if any: an
   * implementation may return it in place of an equal listed item (a list
   * item's other fields are fixed when it is created), and need not decode
   * that item again (`list_reuse.ts`).
   */
  reuse?: (id: string, state: number, createdAt: number) => T | undefined;
}

/**
 * The `runtime.v1.RuntimeService` calls pods-api makes, one method per RPC.
 * Failures reject with {@linkcode CriCallError}.
 */
export interface RuntimeService {
  version(request: MessageInit<VersionRequest>, options?: CriCallOptions): Promise<VersionResponse>;
  status(request: MessageInit<StatusRequest>, options?: CriCallOptions): Promise<StatusResponse>;
  runPodSandbox(
    request: MessageInit<RunPodSandboxRequest>,
    options?: CriCallOptions,
  ): Promise<RunPodSandboxResponse>;
  stopPodSandbox(
    request: MessageInit<PodSandboxIdRequest>,
    options?: CriCallOptions,
  ): Promise<EmptyResponse>;
  removePodSandbox(
    request: MessageInit<PodSandboxIdRequest>,
    options?: CriCallOptions,
  ): Promise<EmptyResponse>;
  podSandboxStatus(
    request: MessageInit<PodSandboxStatusRequest>,
    options?: CriCallOptions,
  ): Promise<PodSandboxStatusResponse>;
  listPodSandbox(
    request: MessageInit<ListPodSandboxRequest>,
    options?: CriListOptions<PodSandbox>,
  ): Promise<ListPodSandboxResponse>;
  createContainer(
    request: MessageInit<CreateContainerRequest>,
    options?: CriCallOptions,
  ): Promise<CreateContainerResponse>;
  startContainer(
    request: MessageInit<ContainerIdRequest>,
    options?: CriCallOptions,
  ): Promise<EmptyResponse>;
  stopContainer(
    request: MessageInit<StopContainerRequest>,
    options?: CriCallOptions,
  ): Promise<EmptyResponse>;
  removeContainer(
    request: MessageInit<ContainerIdRequest>,
    options?: CriCallOptions,
  ): Promise<EmptyResponse>;
  listContainers(
    request: MessageInit<ListContainersRequest>,
    options?: CriListOptions<Container>,
  ): Promise<ListContainersResponse>;
  containerStatus(
    request: MessageInit<ContainerStatusRequest>,
    options?: CriCallOptions,
  ): Promise<ContainerStatusResponse>;
  /**
   * Subscribes to the runtime's container events until `signal` aborts. The
   * iterator ends when the stream ends; it throws {@linkcode CriCallError}
   * when the stream fails (UNIMPLEMENTED on runtimes without events).
   */
  getContainerEvents(
    request: MessageInit<GetEventsRequest>,
    options: { signal: AbortSignal },
  ): AsyncIterable<ContainerEventResponse>;
}

/** The calls the pod source needs: the read side of {@linkcode RuntimeService}. */
export type RuntimeReader = Pick<
  RuntimeService,
  | "listPodSandbox"
  | "listContainers"
  | "podSandboxStatus"
  | "containerStatus"
  | "getContainerEvents"
>;

/**
 * gRPC status codes the CRI code distinguishes, as numbers (the values of
 * grpc-js `status`), so that the in-process simulated runtime can fail calls
 * the way a real one does without depending on grpc-js.
 */
export const CRI_STATUS = {
  ok: 0,
  cancelled: 1,
  unknown: 2,
  invalidArgument: 3,
  deadlineExceeded: 4,
  notFound: 5,
  alreadyExists: 6,
  failedPrecondition: 9,
  unimplemented: 12,
  internal: 13,
  unavailable: 14,
} as const;

/** A failed CRI call: the gRPC status code and the runtime's message. */
export class CriCallError extends Error {
  /** gRPC status code (see {@linkcode CRI_STATUS}). */
  readonly code: number;
  /** The RPC, e.g. `ListPodSandbox`. */
  readonly method: string;

  /**
   * @param message The runtime's details, or what failed.
   * @param options The status code, method and underlying cause.
   */
  constructor(message: string, options: { code: number; method: string; cause?: unknown }) {
    super(message, { cause: options.cause });
    this.name = "CriCallError";
    this.code = options.code;
    this.method = options.method;
  }
}
