/**
 * The Pods services as grpc-js sees them: method paths and byte-for-byte
 * (de)serializers. Messages are encoded and decoded by `src/proto/`, so
 * grpc-js only moves bytes. The server, the reliability tests' raw client and
 * the load benchmark's bare server all use this one definition.
 *
 * @module
 */

import type { ServiceDefinition } from "@grpc/grpc-js";
import type { Buffer } from "node:buffer";

/** The service names on the socket: the kubelet's, and the API page's (no package). */
export type PodsServiceName = "v1alpha1.Pods" | "Pods";

function identity(bytes: Buffer): Buffer {
  return bytes;
}

/**
 * Describes one Pods service with identity serializers.
 *
 * @param service `v1alpha1.Pods` (paths `/v1alpha1.Pods/...`) or `Pods` (paths `/Pods/...`).
 * @returns The definition for `Server.addService` or `makeGenericClientConstructor`.
 */
export function podsServiceDefinition(service: PodsServiceName): ServiceDefinition {
  const method = (name: string, responseStream: boolean) => ({
    path: `/${service}/${name}`,
    requestStream: false,
    responseStream,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
    originalName: name,
  });
  return {
    ListPods: method("ListPods", false),
    GetPod: method("GetPod", false),
    WatchPods: method("WatchPods", true),
  };
}

/**
 * Describes `podsapi.v1.PodQuery` with identity serializers.
 *
 * @returns The definition for `Server.addService` or `makeGenericClientConstructor`.
 */
export function podQueryServiceDefinition(): ServiceDefinition {
  const method = (name: string, responseStream: boolean) => ({
    path: `/podsapi.v1.PodQuery/${name}`,
    requestStream: false,
    responseStream,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
    originalName: name,
  });
  return { List: method("List", false), Get: method("Get", false), Watch: method("Watch", true) };
}
