/**
 * The `runtime.v1.RuntimeService` methods: path, streaming flag and
 * codecs. Shared by the client and by the simulated
 * runtime's server.
 *
 * @module
 */

import { CRI_PACKAGE, type CriMessageCodec, criMessageCodec } from "./cri_codec.ts";
import type {
  ContainerEventResponse,
  ContainerIdRequest,
  ContainerStatusRequest,
  ContainerStatusResponse,
  CreateContainerRequest,
  CreateContainerResponse,
  EmptyResponse,
  GetEventsRequest,
  ListContainersRequest,
  ListContainersResponse,
  ListPodSandboxRequest,
  ListPodSandboxResponse,
  PodSandboxIdRequest,
  PodSandboxStatusRequest,
  PodSandboxStatusResponse,
  RunPodSandboxRequest,
  RunPodSandboxResponse,
  StatusRequest,
  StatusResponse,
  StopContainerRequest,
  VersionRequest,
  VersionResponse,
} from "./_types.ts";

/** Full name of the CRI runtime service. */
export const RUNTIME_SERVICE_NAME = `${CRI_PACKAGE}.RuntimeService`;

/** One RPC of the runtime service. */
export interface CriMethod<Req, Res> {
  /** The RPC name, e.g. `ListPodSandbox`. */
  readonly rpc: string;
  /** `/runtime.v1.RuntimeService/<rpc>`. */
  readonly path: string;
  readonly responseStream: boolean;
  readonly request: CriMessageCodec<Req>;
  readonly response: CriMessageCodec<Res>;
}

function method<Req, Res>(
  rpc: string,
  requestType: string,
  responseType: string,
  responseStream = false,
): CriMethod<Req, Res> {
  return {
    rpc,
    path: `/${RUNTIME_SERVICE_NAME}/${rpc}`,
    responseStream,
    request: criMessageCodec<Req>(requestType),
    response: criMessageCodec<Res>(responseType),
  };
}

/** Every RPC pods-api declares, keyed by the {@linkcode RuntimeService} method name. */
export const CRI_METHODS = {
  version: method<VersionRequest, VersionResponse>("Version", "VersionRequest", "VersionResponse"),
  status: method<StatusRequest, StatusResponse>("Status", "StatusRequest", "StatusResponse"),
  runPodSandbox: method<RunPodSandboxRequest, RunPodSandboxResponse>(
    "RunPodSandbox",
    "RunPodSandboxRequest",
    "RunPodSandboxResponse",
  ),
  stopPodSandbox: method<PodSandboxIdRequest, EmptyResponse>(
    "StopPodSandbox",
    "StopPodSandboxRequest",
    "StopPodSandboxResponse",
  ),
  removePodSandbox: method<PodSandboxIdRequest, EmptyResponse>(
    "RemovePodSandbox",
    "RemovePodSandboxRequest",
    "RemovePodSandboxResponse",
  ),
  podSandboxStatus: method<PodSandboxStatusRequest, PodSandboxStatusResponse>(
    "PodSandboxStatus",
    "PodSandboxStatusRequest",
    "PodSandboxStatusResponse",
  ),
  listPodSandbox: method<ListPodSandboxRequest, ListPodSandboxResponse>(
    "ListPodSandbox",
    "ListPodSandboxRequest",
    "ListPodSandboxResponse",
  ),
  createContainer: method<CreateContainerRequest, CreateContainerResponse>(
    "CreateContainer",
    "CreateContainerRequest",
    "CreateContainerResponse",
  ),
  startContainer: method<ContainerIdRequest, EmptyResponse>(
    "StartContainer",
    "StartContainerRequest",
    "StartContainerResponse",
  ),
  stopContainer: method<StopContainerRequest, EmptyResponse>(
    "StopContainer",
    "StopContainerRequest",
    "StopContainerResponse",
  ),
  removeContainer: method<ContainerIdRequest, EmptyResponse>(
    "RemoveContainer",
    "RemoveContainerRequest",
    "RemoveContainerResponse",
  ),
  listContainers: method<ListContainersRequest, ListContainersResponse>(
    "ListContainers",
    "ListContainersRequest",
    "ListContainersResponse",
  ),
  containerStatus: method<ContainerStatusRequest, ContainerStatusResponse>(
    "ContainerStatus",
    "ContainerStatusRequest",
    "ContainerStatusResponse",
  ),
  getContainerEvents: method<GetEventsRequest, ContainerEventResponse>(
    "GetContainerEvents",
    "GetEventsRequest",
    "ContainerEventResponse",
    true,
  ),
} as const;

/** Names of the runtime service methods (camelCase, as in {@linkcode CRI_METHODS}). */
export type CriMethodName = keyof typeof CRI_METHODS;
