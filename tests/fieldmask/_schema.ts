/**
 * A small hand-made pod schema for the field mask tests and bench (the real
 * one is built from the protobuf descriptor). Field order follows the proto
 * field order, as the real schema's does.
 *
 * @module
 */

import type { FieldSchema, MessageSchema, ObjectSchema } from "../../src/fieldmask/schema.ts";

const S: FieldSchema = { kind: "scalar", repeated: false };
const SS: FieldSchema = { kind: "scalar", repeated: true };
const MAP: FieldSchema = { kind: "map", repeated: false };

function msg(type: string): FieldSchema {
  return { kind: "message", repeated: false, type };
}
function list(type: string): FieldSchema {
  return { kind: "message", repeated: true, type };
}
function message(fields: Record<string, FieldSchema>): MessageSchema {
  return { fields: new Map(Object.entries(fields)) };
}

const STATE_FIELDS = {
  waiting: msg("ContainerStateWaiting"),
  running: msg("ContainerStateRunning"),
  terminated: msg("ContainerStateTerminated"),
};

/** The test schema: a trimmed `v1.Pod`. */
export const TEST_POD_SCHEMA: ObjectSchema = {
  root: "k8s.io.api.core.v1.Pod",
  messages: new Map<string, MessageSchema>([
    [
      "k8s.io.api.core.v1.Pod",
      message({ metadata: msg("ObjectMeta"), spec: msg("PodSpec"), status: msg("PodStatus") }),
    ],
    [
      "ObjectMeta",
      message({
        name: S,
        namespace: S,
        uid: S,
        resourceVersion: S,
        creationTimestamp: S,
        deletionTimestamp: S,
        labels: MAP,
        annotations: MAP,
        ownerReferences: list("OwnerReference"),
      }),
    ],
    ["OwnerReference", message({ kind: S, name: S, uid: S, apiVersion: S, controller: S })],
    [
      "PodSpec",
      message({
        volumes: list("Volume"),
        containers: list("Container"),
        restartPolicy: S,
        nodeName: S,
        hostNetwork: S,
        initContainers: list("Container"),
      }),
    ],
    // VolumeSource is an inline Go struct: its fields sit in Volume, as in JSON.
    [
      "Volume",
      message({
        name: S,
        emptyDir: msg("EmptyDirVolumeSource"),
        configMap: msg("ConfigMapVolumeSource"),
      }),
    ],
    ["EmptyDirVolumeSource", message({ medium: S, sizeLimit: S })],
    [
      "ConfigMapVolumeSource",
      message({ name: S, items: list("KeyToPath"), defaultMode: S, optional: S }),
    ],
    ["KeyToPath", message({ key: S, path: S, mode: S })],
    [
      "Container",
      message({
        name: S,
        image: S,
        command: SS,
        args: SS,
        ports: list("ContainerPort"),
        env: list("EnvVar"),
        resources: msg("ResourceRequirements"),
      }),
    ],
    ["ContainerPort", message({ name: S, hostPort: S, containerPort: S, protocol: S, hostIP: S })],
    ["EnvVar", message({ name: S, value: S, valueFrom: msg("EnvVarSource") })],
    ["EnvVarSource", message({ fieldRef: msg("ObjectFieldSelector") })],
    ["ObjectFieldSelector", message({ apiVersion: S, fieldPath: S })],
    ["ResourceRequirements", message({ limits: MAP, requests: MAP })],
    [
      "PodStatus",
      message({
        phase: S,
        conditions: list("PodCondition"),
        hostIP: S,
        podIP: S,
        startTime: S,
        containerStatuses: list("ContainerStatus"),
        podIPs: list("PodIP"),
      }),
    ],
    [
      "PodCondition",
      message({
        type: S,
        status: S,
        lastProbeTime: S,
        lastTransitionTime: S,
        reason: S,
        message: S,
      }),
    ],
    ["PodIP", message({ ip: S })],
    [
      "ContainerStatus",
      message({
        name: S,
        state: msg("ContainerState"),
        lastState: msg("ContainerState"),
        ready: S,
        restartCount: S,
        image: S,
        imageID: S,
        containerID: S,
        started: S,
      }),
    ],
    ["ContainerState", message(STATE_FIELDS)],
    ["ContainerStateWaiting", message({ reason: S, message: S })],
    ["ContainerStateRunning", message({ startedAt: S })],
    [
      "ContainerStateTerminated",
      message({
        exitCode: S,
        signal: S,
        reason: S,
        message: S,
        startedAt: S,
        finishedAt: S,
        containerID: S,
      }),
    ],
  ]),
};
