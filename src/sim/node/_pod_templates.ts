/**
 * Turns a workload template into a pod's metadata and spec, with the
 * defaults the API server and the admission chain would have filled in
 * (termination message path, pull policy, default tolerations, the
 * projected service account token volume...).
 *
 * @module
 */

import type { JsonObject } from "../../model/json.ts";
import type { PodMetadata } from "../../model/pod.ts";
import type { ContainerTemplate, WorkloadTemplate } from "./_workloads.ts";
import { rfc3339, rfc3339Nano } from "../../model/rfc3339.ts";

/** A workload placed in a namespace of this node's cluster. */
export interface Workload {
  readonly template: WorkloadTemplate;
  readonly namespace: string;
  /** UID of the owning ReplicaSet or DaemonSet (unused for Jobs and static pods). */
  readonly ownerUid: string;
  /** `pod-template-hash`, `controller-revision-hash` or the static pod's config hash. */
  readonly hash: string;
}

/** Who a new pod is and who owns it. */
export interface PodIdentity {
  readonly uid: string;
  readonly name: string;
  readonly createdAtMs: number;
  /** Random suffix of the `kube-api-access-*` volume. */
  readonly tokenSuffix: string;
  /** For Job pods: the Job's name and UID. */
  readonly job?: { readonly name: string; readonly uid: string };
}

/** The node a pod runs on. */
export interface NodeIdentity {
  readonly nodeName: string;
  readonly nodeUid: string;
}

const TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount";

function notReadyTolerations(seconds: number | undefined): JsonObject[] {
  return ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"].map((key) =>
    seconds === undefined
      ? { key, operator: "Exists", effect: "NoExecute" }
      : { key, operator: "Exists", effect: "NoExecute", tolerationSeconds: seconds }
  );
}

/** Tolerations the DaemonSet controller adds to every daemon pod. */
function daemonTolerations(hostNetwork: boolean): JsonObject[] {
  const out = notReadyTolerations(undefined);
  const noSchedule = [
    "node.kubernetes.io/disk-pressure",
    "node.kubernetes.io/memory-pressure",
    "node.kubernetes.io/pid-pressure",
    "node.kubernetes.io/unschedulable",
  ];
  if (hostNetwork) noSchedule.push("node.kubernetes.io/network-unavailable");
  for (const key of noSchedule) out.push({ key, operator: "Exists", effect: "NoSchedule" });
  return out;
}

function tolerationsOf(template: WorkloadTemplate): JsonObject[] {
  const own = [...(template.tolerations ?? [])];
  switch (template.kind) {
    case "Static":
      return [{ operator: "Exists", effect: "NoExecute" }, ...own];
    case "DaemonSet":
      return [...own, ...daemonTolerations(template.hostNetwork === true)];
    default:
      // The DefaultTolerationSeconds admission plugin's five minutes.
      return [...own, ...notReadyTolerations(300)];
  }
}

function containerJson(c: ContainerTemplate, tokenVolume: string | undefined): JsonObject {
  const out: JsonObject = { name: c.name, image: c.image };
  if (c.command) out.command = [...c.command];
  if (c.args) out.args = [...c.args];
  if (c.ports) out.ports = [...c.ports];
  if (c.env) out.env = [...c.env];
  const resources: JsonObject = {};
  if (c.limits) resources.limits = { ...c.limits };
  if (c.requests) resources.requests = { ...c.requests };
  out.resources = resources;
  const mounts = [...(c.volumeMounts ?? [])];
  if (tokenVolume) mounts.push({ name: tokenVolume, readOnly: true, mountPath: TOKEN_MOUNT_PATH });
  if (mounts.length > 0) out.volumeMounts = mounts;
  if (c.livenessProbe) out.livenessProbe = c.livenessProbe;
  if (c.readinessProbe) out.readinessProbe = c.readinessProbe;
  if (c.startupProbe) out.startupProbe = c.startupProbe;
  out.terminationMessagePath = "/dev/termination-log";
  out.terminationMessagePolicy = "File";
  out.imagePullPolicy = "IfNotPresent";
  if (c.securityContext) out.securityContext = c.securityContext;
  return out;
}

function tokenVolumeJson(name: string): JsonObject {
  return {
    name,
    projected: {
      sources: [
        { serviceAccountToken: { expirationSeconds: 3607, path: "token" } },
        { configMap: { name: "kube-root-ca.crt", items: [{ key: "ca.crt", path: "ca.crt" }] } },
        {
          downwardAPI: {
            items: [{
              path: "namespace",
              fieldRef: { apiVersion: "v1", fieldPath: "metadata.namespace" },
            }],
          },
        },
      ],
      defaultMode: 420,
    },
  };
}

/**
 * Builds a pod's spec from its workload.
 *
 * @param workload The placed workload.
 * @param identity The new pod's identity (for its token volume name).
 * @param node The node it is bound to.
 * @returns The spec in its JSON shape, API defaults applied.
 */
export function renderSpec(
  workload: Workload,
  identity: PodIdentity,
  node: NodeIdentity,
): JsonObject {
  const t = workload.template;
  const sa = t.kind === "Static" ? undefined : (t.serviceAccountName ?? "default");
  const tokenVolume = sa ? `kube-api-access-${identity.tokenSuffix}` : undefined;
  const volumes = [...(t.volumes ?? [])];
  if (tokenVolume) volumes.push(tokenVolumeJson(tokenVolume));
  const spec: JsonObject = {};
  if (volumes.length > 0) spec.volumes = volumes;
  if (t.initContainers) {
    spec.initContainers = t.initContainers.map((c) => containerJson(c, tokenVolume));
  }
  spec.containers = t.containers.map((c) => containerJson(c, tokenVolume));
  spec.restartPolicy = t.restartPolicy;
  spec.terminationGracePeriodSeconds = t.terminationGracePeriodSeconds ?? 30;
  spec.dnsPolicy = t.dnsPolicy ?? "ClusterFirst";
  if (t.nodeSelector) spec.nodeSelector = { ...t.nodeSelector };
  if (sa) {
    spec.serviceAccountName = sa;
    spec.serviceAccount = sa;
  }
  spec.nodeName = node.nodeName;
  if (t.hostNetwork) spec.hostNetwork = true;
  if (t.hostPID) spec.hostPID = true;
  spec.securityContext = t.securityContext ?? {};
  if (t.kind === "DaemonSet") {
    spec.affinity = {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{
            matchFields: [{ key: "metadata.name", operator: "In", values: [node.nodeName] }],
          }],
        },
      },
    };
  }
  spec.schedulerName = "default-scheduler";
  spec.tolerations = tolerationsOf(t);
  if (t.priorityClassName) spec.priorityClassName = t.priorityClassName;
  spec.priority = t.priority ?? 0;
  spec.enableServiceLinks = true;
  spec.preemptionPolicy = "PreemptLowerPriority";
  return spec;
}

/**
 * Builds a pod's metadata from its workload: labels the controllers add,
 * owner references, and the kubelet's `kubernetes.io/config.*` annotations
 * for the static pod.
 *
 * @param workload The placed workload.
 * @param identity UID, name, creation time and owners.
 * @param node The node (static pods are owned by it).
 * @returns The metadata in its JSON shape.
 */
export function renderMetadata(
  workload: Workload,
  identity: PodIdentity,
  node: NodeIdentity,
): PodMetadata {
  const t = workload.template;
  const labels: Record<string, string> = { ...t.labels };
  const annotations: Record<string, string> = { ...(t.annotations ?? {}) };
  const meta: PodMetadata = {
    name: identity.name,
    namespace: workload.namespace,
    uid: identity.uid,
    creationTimestamp: rfc3339(identity.createdAtMs),
  };
  let owner: JsonObject | undefined;
  switch (t.kind) {
    case "Deployment": {
      labels["pod-template-hash"] = workload.hash;
      const rs = `${t.name}-${workload.hash}`;
      meta.generateName = `${rs}-`;
      owner = { apiVersion: "apps/v1", kind: "ReplicaSet", name: rs, uid: workload.ownerUid };
      break;
    }
    case "DaemonSet":
      labels["controller-revision-hash"] = workload.hash;
      labels["pod-template-generation"] = "1";
      meta.generateName = `${t.name}-`;
      owner = { apiVersion: "apps/v1", kind: "DaemonSet", name: t.name, uid: workload.ownerUid };
      break;
    case "Job":
    case "CronJob": {
      const job = identity.job!;
      labels["batch.kubernetes.io/controller-uid"] = job.uid;
      labels["batch.kubernetes.io/job-name"] = job.name;
      labels["controller-uid"] = job.uid;
      labels["job-name"] = job.name;
      annotations["batch.kubernetes.io/job-tracking"] = "";
      meta.generateName = `${job.name}-`;
      meta.finalizers = ["batch.kubernetes.io/job-tracking"];
      owner = { apiVersion: "batch/v1", kind: "Job", name: job.name, uid: job.uid };
      break;
    }
    case "Static":
      annotations["kubernetes.io/config.hash"] = workload.hash;
      annotations["kubernetes.io/config.mirror"] = workload.hash;
      annotations["kubernetes.io/config.seen"] = rfc3339Nano(
        identity.createdAtMs,
        (identity.createdAtMs * 7919) % 1000000,
      );
      annotations["kubernetes.io/config.source"] = "file";
      owner = { apiVersion: "v1", kind: "Node", name: node.nodeName, uid: node.nodeUid };
      break;
  }
  meta.labels = labels;
  if (Object.keys(annotations).length > 0) meta.annotations = annotations;
  if (owner) {
    owner.controller = true;
    if (t.kind !== "Static") owner.blockOwnerDeletion = true;
    meta.ownerReferences = [owner];
  }
  return meta;
}
