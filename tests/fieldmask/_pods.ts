/**
 * Pod objects for the field mask tests and bench.
 *
 * @module
 */

import type { PodObject } from "../../src/model/pod.ts";

/**
 * Builds a pod with every field of the test schema set.
 *
 * @param i Distinguishes pods (name, UID, IP).
 * @returns A fresh pod.
 */
export function makeFullPod(i = 0): PodObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: `web-${i}`,
      namespace: "default",
      uid: `00000000-0000-0000-0000-${String(i).padStart(12, "0")}`,
      resourceVersion: String(1000 + i),
      creationTimestamp: "2026-01-01T00:00:00Z",
      labels: { app: "web", tier: "frontend" },
      annotations: { "kubernetes.io/config.source": "api" },
      ownerReferences: [
        {
          apiVersion: "apps/v1",
          kind: "ReplicaSet",
          name: "web-abc",
          uid: "rs-1",
          controller: true,
        },
      ],
    },
    spec: {
      volumes: [
        {
          name: "config",
          configMap: { name: "web-config", items: [{ key: "a", path: "a.conf" }] },
        },
        { name: "scratch", emptyDir: { medium: "Memory" } },
      ],
      containers: [
        {
          name: "app",
          image: "nginx:1.27",
          command: ["nginx"],
          args: ["-g", "daemon off;"],
          ports: [{ name: "http", containerPort: 80, protocol: "TCP" }],
          env: [
            { name: "MODE", value: "prod" },
            {
              name: "POD_IP",
              valueFrom: { fieldRef: { apiVersion: "v1", fieldPath: "status.podIP" } },
            },
          ],
          resources: { limits: { cpu: "500m", memory: "128Mi" }, requests: { cpu: "100m" } },
        },
        {
          name: "sidecar",
          image: "busybox:1.36",
          resources: {},
        },
      ],
      restartPolicy: "Always",
      nodeName: "node-1",
    },
    status: {
      phase: "Running",
      conditions: [
        { type: "Ready", status: "True", lastTransitionTime: "2026-01-01T00:00:05Z" },
        { type: "PodScheduled", status: "True", lastTransitionTime: "2026-01-01T00:00:00Z" },
      ],
      hostIP: "10.0.0.1",
      podIP: `10.1.${i >> 8 & 255}.${i & 255}`,
      startTime: "2026-01-01T00:00:01Z",
      podIPs: [{ ip: `10.1.${i >> 8 & 255}.${i & 255}` }, { ip: "fd00::1" }],
      containerStatuses: [
        {
          name: "app",
          state: { running: { startedAt: "2026-01-01T00:00:03Z" } },
          lastState: {
            terminated: {
              exitCode: 137,
              reason: "OOMKilled",
              startedAt: "2026-01-01T00:00:01Z",
              finishedAt: "2026-01-01T00:00:02Z",
              containerID: "containerd://aaa",
            },
          },
          ready: true,
          restartCount: 1,
          image: "nginx:1.27",
          containerID: "containerd://bbb",
        },
        {
          name: "sidecar",
          state: { waiting: { reason: "ContainerCreating" } },
          ready: false,
          restartCount: 0,
        },
      ],
    },
  };
}
