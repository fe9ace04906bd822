/**
 * The `runtime.v1.RuntimeService` methods as grpc-js needs them: path,
 * streaming flag and protobufjs-based serializers. Shared by the client and
 * by the simulated runtime's server.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import type { MethodDefinition, ServiceDefinition } from "@grpc/grpc-js";
import { CRI_PACKAGE, type CriMessageCodec, criMessageCodec } from "../../proto/cri_codec.ts";
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
  MessageInit,
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

/**
 * Wraps encoded bytes in a Buffer without copying (grpc-js wants Buffers).
 *
 * @param bytes Encoded message.
 * @returns The same bytes as a Buffer.
 */
export function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * Builds the grpc-js definition of one method, for a server (`addService`) or
 * a generic client.
 *
 * @param m The method.
 * @returns Its grpc-js definition; serializers accept partial messages.
 */
export function methodDefinition<Req, Res>(
  m: CriMethod<Req, Res>,
): MethodDefinition<MessageInit<Req>, MessageInit<Res>> {
  return {
    path: m.path,
    requestStream: false,
    responseStream: m.responseStream,
    originalName: m.rpc,
    requestSerialize: (value) => toBuffer(m.request.encode(value)),
    requestDeserialize: (bytes) => m.request.decode(bytes) as MessageInit<Req>,
    responseSerialize: (value) => toBuffer(m.response.encode(value)),
    responseDeserialize: (bytes) => m.response.decode(bytes) as MessageInit<Res>,
  };
}

/**
 * The grpc-js service definition of `runtime.v1.RuntimeService` (the methods
 * pods-api declares), keyed by RPC name as a server implementation is.
 *
 * @returns The definition.
 */
export function runtimeServiceDefinition(): ServiceDefinition {
  const definition: Record<string, MethodDefinition<unknown, unknown>> = {};
  for (const m of Object.values(CRI_METHODS)) {
    definition[m.rpc] = methodDefinition<unknown, unknown>(m as CriMethod<unknown, unknown>);
  }
  return definition;
}
