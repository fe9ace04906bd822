/**
 * The catalogue of workloads the simulated node runs: a few Deployments,
 * DaemonSets, (Cron)Jobs and one static pod, described as a user would write
 * their pod templates. `_pod_templates.ts` turns them into pods.
 *
 * @module
 */

import type { JsonObject } from "../../model/json.ts";

/** What created a pod. */
export type WorkloadKind = "Deployment" | "DaemonSet" | "Job" | "CronJob" | "Static";

/** Kubernetes restart policies. */
export type RestartPolicy = "Always" | "OnFailure" | "Never";

/** A container of a pod template, before API defaults are applied. */
export interface ContainerTemplate {
  readonly name: string;
  /** A fully qualified reference, as the runtime reports it back. */
  readonly image: string;
  readonly command?: readonly string[];
  readonly args?: readonly string[];
  readonly ports?: readonly JsonObject[];
  readonly env?: readonly JsonObject[];
  readonly requests?: Readonly<Record<string, string>>;
  readonly limits?: Readonly<Record<string, string>>;
  readonly volumeMounts?: readonly JsonObject[];
  readonly livenessProbe?: JsonObject;
  readonly readinessProbe?: JsonObject;
  readonly startupProbe?: JsonObject;
  readonly securityContext?: JsonObject;
}

/** A pod template plus what owns it. */
export interface WorkloadTemplate {
  readonly kind: WorkloadKind;
  readonly name: string;
  /** The namespace it lives in when the node has it (else a fallback is chosen). */
  readonly namespace: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
  readonly containers: readonly ContainerTemplate[];
  readonly initContainers?: readonly ContainerTemplate[];
  readonly volumes?: readonly JsonObject[];
  /** Absent for static pods, which cannot use service accounts. */
  readonly serviceAccountName?: string;
  readonly restartPolicy: RestartPolicy;
  readonly hostNetwork?: boolean;
  readonly hostPID?: boolean;
  readonly dnsPolicy?: string;
  readonly priorityClassName?: string;
  readonly priority?: number;
  readonly tolerations?: readonly JsonObject[];
  readonly nodeSelector?: Readonly<Record<string, string>>;
  readonly terminationGracePeriodSeconds?: number;
  readonly securityContext?: JsonObject;
  /** Relative share of new Deployment and Job pods. */
  readonly weight: number;
  /** Jobs with restartPolicy Never: chance that a finished pod failed. */
  readonly failureRate?: number;
}

const SYSTEM_NODE_CRITICAL = 2000001000;
const SYSTEM_CLUSTER_CRITICAL = 2000000000;

function fieldEnv(name: string, fieldPath: string): JsonObject {
  return { name, valueFrom: { fieldRef: { apiVersion: "v1", fieldPath } } };
}

function httpProbe(path: string, port: number | string, extra: JsonObject = {}): JsonObject {
  return {
    httpGet: { path, port, scheme: "HTTP" },
    timeoutSeconds: 1,
    periodSeconds: 10,
    successThreshold: 1,
    failureThreshold: 3,
    ...extra,
  };
}

const POD_NAME_ENV = fieldEnv("POD_NAME", "metadata.name");
const POD_NAMESPACE_ENV = fieldEnv("POD_NAMESPACE", "metadata.namespace");
const NODE_NAME_ENV = fieldEnv("NODE_NAME", "spec.nodeName");

/** Every workload of the simulated cluster that may land on this node. */
export const WORKLOADS: readonly WorkloadTemplate[] = [
  {
    kind: "Deployment",
    name: "checkout-api",
    namespace: "payments",
    labels: { "app.kubernetes.io/name": "checkout-api", "app.kubernetes.io/part-of": "payments" },
    annotations: { "prometheus.io/scrape": "true", "prometheus.io/port": "9090" },
    serviceAccountName: "checkout-api",
    restartPolicy: "Always",
    weight: 4,
    initContainers: [{
      name: "wait-for-db",
      image: "docker.io/library/busybox:1.36.1",
      command: ["sh", "-c", "until nc -z postgres.payments 5432; do sleep 2; done"],
      requests: { cpu: "10m", memory: "16Mi" },
      limits: { memory: "32Mi" },
    }],
    containers: [
      {
        name: "app",
        image: "ghcr.io/acme/checkout-api:2.14.1",
        args: ["--config=/etc/checkout/config.yaml"],
        ports: [
          { name: "http", containerPort: 8080, protocol: "TCP" },
          { name: "metrics", containerPort: 9090, protocol: "TCP" },
        ],
        env: [
          POD_NAME_ENV,
          POD_NAMESPACE_ENV,
          { name: "LOG_LEVEL", value: "info" },
          {
            name: "DB_PASSWORD",
            valueFrom: { secretKeyRef: { name: "checkout-db", key: "password" } },
          },
        ],
        requests: { cpu: "250m", memory: "256Mi" },
        limits: { memory: "512Mi" },
        volumeMounts: [
          { name: "config", mountPath: "/etc/checkout", readOnly: true },
          { name: "tls", mountPath: "/etc/tls", readOnly: true },
          { name: "tmp", mountPath: "/tmp" },
        ],
        readinessProbe: httpProbe("/readyz", "http"),
        livenessProbe: httpProbe("/livez", "http", { initialDelaySeconds: 10 }),
        securityContext: {
          runAsNonRoot: true,
          runAsUser: 10001,
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
        },
      },
      {
        name: "envoy",
        image: "docker.io/envoyproxy/envoy:v1.31.2",
        args: ["-c", "/etc/envoy/envoy.yaml", "--log-level", "warn"],
        ports: [{ name: "proxy", containerPort: 15001, protocol: "TCP" }],
        requests: { cpu: "100m", memory: "64Mi" },
        limits: { cpu: "500m", memory: "256Mi" },
        volumeMounts: [{ name: "config", mountPath: "/etc/envoy", subPath: "envoy" }],
        readinessProbe: httpProbe("/ready", 15021),
      },
    ],
    volumes: [
      { name: "config", configMap: { name: "checkout-config", defaultMode: 420 } },
      { name: "tls", secret: { secretName: "checkout-tls", defaultMode: 420 } },
      { name: "tmp", emptyDir: { sizeLimit: "64Mi" } },
    ],
  },
  {
    kind: "Deployment",
    name: "ledger-worker",
    namespace: "payments",
    labels: { "app.kubernetes.io/name": "ledger-worker", "app.kubernetes.io/part-of": "payments" },
    serviceAccountName: "ledger-worker",
    restartPolicy: "Always",
    weight: 3,
    terminationGracePeriodSeconds: 60,
    containers: [{
      name: "worker",
      image: "ghcr.io/acme/ledger-worker:1.8.0",
      env: [
        { name: "QUEUE_URL", value: "amqp://rabbitmq.payments:5672" },
        { name: "GOMAXPROCS", value: "1" },
        POD_NAME_ENV,
      ],
      requests: { cpu: "500m", memory: "512Mi" },
      limits: { cpu: "500m", memory: "512Mi" },
      livenessProbe: {
        exec: { command: ["/bin/grpc_health_probe", "-addr=:9000"] },
        initialDelaySeconds: 5,
        timeoutSeconds: 1,
        periodSeconds: 10,
        successThreshold: 1,
        failureThreshold: 3,
      },
    }],
  },
  {
    kind: "Deployment",
    name: "frontend",
    namespace: "default",
    labels: { app: "frontend", tier: "web" },
    restartPolicy: "Always",
    weight: 4,
    containers: [{
      name: "nginx",
      image: "docker.io/library/nginx:1.27.2",
      ports: [{ containerPort: 80, protocol: "TCP" }],
      requests: { cpu: "100m", memory: "64Mi" },
      limits: { cpu: "200m", memory: "128Mi" },
      volumeMounts: [
        { name: "site", mountPath: "/usr/share/nginx/html", readOnly: true },
        { name: "cache", mountPath: "/var/cache/nginx" },
      ],
      readinessProbe: httpProbe("/", 80),
    }],
    volumes: [
      { name: "site", configMap: { name: "frontend-site", defaultMode: 420 } },
      { name: "cache", emptyDir: {} },
    ],
  },
  {
    kind: "Deployment",
    name: "coredns",
    namespace: "kube-system",
    labels: { "k8s-app": "kube-dns" },
    serviceAccountName: "coredns",
    restartPolicy: "Always",
    dnsPolicy: "Default",
    priorityClassName: "system-cluster-critical",
    priority: SYSTEM_CLUSTER_CRITICAL,
    nodeSelector: { "kubernetes.io/os": "linux" },
    tolerations: [
      { key: "CriticalAddonsOnly", operator: "Exists" },
      { key: "node-role.kubernetes.io/control-plane", effect: "NoSchedule" },
    ],
    weight: 1,
    containers: [{
      name: "coredns",
      image: "registry.k8s.io/coredns/coredns:v1.11.3",
      args: ["-conf", "/etc/coredns/Corefile"],
      ports: [
        { name: "dns", containerPort: 53, protocol: "UDP" },
        { name: "dns-tcp", containerPort: 53, protocol: "TCP" },
        { name: "metrics", containerPort: 9153, protocol: "TCP" },
      ],
      requests: { cpu: "100m", memory: "70Mi" },
      limits: { memory: "170Mi" },
      volumeMounts: [{ name: "config-volume", mountPath: "/etc/coredns", readOnly: true }],
      livenessProbe: httpProbe("/health", 8080, {
        initialDelaySeconds: 60,
        timeoutSeconds: 5,
        failureThreshold: 5,
      }),
      readinessProbe: httpProbe("/ready", 8181),
      securityContext: {
        allowPrivilegeEscalation: false,
        capabilities: { add: ["NET_BIND_SERVICE"], drop: ["ALL"] },
        readOnlyRootFilesystem: true,
      },
    }],
    volumes: [{
      name: "config-volume",
      configMap: {
        name: "coredns",
        items: [{ key: "Corefile", path: "Corefile" }],
        defaultMode: 420,
      },
    }],
  },
  {
    kind: "Deployment",
    name: "metrics-server",
    namespace: "kube-system",
    labels: { "k8s-app": "metrics-server" },
    serviceAccountName: "metrics-server",
    restartPolicy: "Always",
    priorityClassName: "system-cluster-critical",
    priority: SYSTEM_CLUSTER_CRITICAL,
    weight: 1,
    containers: [{
      name: "metrics-server",
      image: "registry.k8s.io/metrics-server/metrics-server:v0.7.2",
      args: [
        "--cert-dir=/tmp",
        "--secure-port=10250",
        "--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
        "--metric-resolution=15s",
      ],
      ports: [{ name: "https", containerPort: 10250, protocol: "TCP" }],
      requests: { cpu: "100m", memory: "200Mi" },
      volumeMounts: [{ name: "tmp-dir", mountPath: "/tmp" }],
      readinessProbe: {
        httpGet: { path: "/readyz", port: "https", scheme: "HTTPS" },
        initialDelaySeconds: 20,
        timeoutSeconds: 1,
        periodSeconds: 10,
        successThreshold: 1,
        failureThreshold: 3,
      },
    }],
    volumes: [{ name: "tmp-dir", emptyDir: {} }],
  },
  {
    kind: "Deployment",
    name: "grafana",
    namespace: "monitoring",
    labels: { "app.kubernetes.io/name": "grafana", "app.kubernetes.io/instance": "grafana" },
    serviceAccountName: "grafana",
    restartPolicy: "Always",
    securityContext: { fsGroup: 472, runAsGroup: 472, runAsUser: 472 },
    weight: 1,
    initContainers: [{
      name: "init-chown-data",
      image: "docker.io/library/busybox:1.36.1",
      command: ["chown", "-R", "472:472", "/var/lib/grafana"],
      volumeMounts: [{ name: "storage", mountPath: "/var/lib/grafana" }],
      securityContext: { runAsNonRoot: false, runAsUser: 0 },
    }],
    containers: [{
      name: "grafana",
      image: "docker.io/grafana/grafana:11.2.2",
      ports: [{ name: "grafana", containerPort: 3000, protocol: "TCP" }],
      env: [{ name: "GF_PATHS_DATA", value: "/var/lib/grafana/" }],
      requests: { cpu: "100m", memory: "128Mi" },
      limits: { cpu: "1", memory: "1Gi" },
      volumeMounts: [
        { name: "storage", mountPath: "/var/lib/grafana" },
        { name: "config", mountPath: "/etc/grafana/grafana.ini", subPath: "grafana.ini" },
      ],
      readinessProbe: httpProbe("/api/health", 3000),
    }],
    volumes: [
      { name: "config", configMap: { name: "grafana", defaultMode: 420 } },
      { name: "storage", emptyDir: {} },
    ],
  },
  {
    kind: "Deployment",
    name: "kube-state-metrics",
    namespace: "monitoring",
    labels: { "app.kubernetes.io/name": "kube-state-metrics" },
    serviceAccountName: "kube-state-metrics",
    restartPolicy: "Always",
    weight: 1,
    containers: [{
      name: "kube-state-metrics",
      image: "registry.k8s.io/kube-state-metrics/kube-state-metrics:v2.13.0",
      args: ["--port=8080", "--telemetry-port=8081"],
      ports: [
        { name: "http-metrics", containerPort: 8080, protocol: "TCP" },
        { name: "telemetry", containerPort: 8081, protocol: "TCP" },
      ],
      requests: { cpu: "10m", memory: "190Mi" },
      limits: { memory: "250Mi" },
      livenessProbe: httpProbe("/livez", "http-metrics", {
        initialDelaySeconds: 5,
        timeoutSeconds: 5,
      }),
      readinessProbe: httpProbe("/readyz", "telemetry", {
        initialDelaySeconds: 5,
        timeoutSeconds: 5,
      }),
    }],
  },
  {
    kind: "Deployment",
    name: "ingress-nginx-controller",
    namespace: "ingress-nginx",
    labels: {
      "app.kubernetes.io/name": "ingress-nginx",
      "app.kubernetes.io/component": "controller",
    },
    serviceAccountName: "ingress-nginx",
    restartPolicy: "Always",
    terminationGracePeriodSeconds: 300,
    weight: 1,
    containers: [{
      name: "controller",
      image: "registry.k8s.io/ingress-nginx/controller:v1.11.3",
      args: [
        "/nginx-ingress-controller",
        "--election-id=ingress-nginx-leader",
        "--controller-class=k8s.io/ingress-nginx",
        "--validating-webhook=:8443",
      ],
      ports: [
        { name: "http", containerPort: 80, protocol: "TCP" },
        { name: "https", containerPort: 443, protocol: "TCP" },
        { name: "webhook", containerPort: 8443, protocol: "TCP" },
      ],
      env: [POD_NAME_ENV, POD_NAMESPACE_ENV, {
        name: "LD_PRELOAD",
        value: "/usr/local/lib/libmimalloc.so",
      }],
      requests: { cpu: "100m", memory: "90Mi" },
      volumeMounts: [{
        name: "webhook-cert",
        mountPath: "/usr/local/certificates/",
        readOnly: true,
      }],
      livenessProbe: httpProbe("/healthz", 10254, { initialDelaySeconds: 10, failureThreshold: 5 }),
      readinessProbe: httpProbe("/healthz", 10254, { initialDelaySeconds: 10 }),
      securityContext: {
        allowPrivilegeEscalation: false,
        capabilities: { add: ["NET_BIND_SERVICE"], drop: ["ALL"] },
        runAsUser: 101,
      },
    }],
    volumes: [{
      name: "webhook-cert",
      secret: { secretName: "ingress-nginx-admission", defaultMode: 420 },
    }],
  },
  {
    kind: "DaemonSet",
    name: "kube-proxy",
    namespace: "kube-system",
    labels: { "k8s-app": "kube-proxy" },
    serviceAccountName: "kube-proxy",
    restartPolicy: "Always",
    hostNetwork: true,
    dnsPolicy: "ClusterFirst",
    priorityClassName: "system-node-critical",
    priority: SYSTEM_NODE_CRITICAL,
    nodeSelector: { "kubernetes.io/os": "linux" },
    tolerations: [{ operator: "Exists" }],
    weight: 0,
    containers: [{
      name: "kube-proxy",
      image: "registry.k8s.io/kube-proxy:v1.31.2",
      command: [
        "/usr/local/bin/kube-proxy",
        "--config=/var/lib/kube-proxy/config.conf",
        "--hostname-override=$(NODE_NAME)",
      ],
      env: [NODE_NAME_ENV],
      volumeMounts: [
        { name: "kube-proxy", mountPath: "/var/lib/kube-proxy" },
        { name: "xtables-lock", mountPath: "/run/xtables.lock" },
        { name: "lib-modules", mountPath: "/lib/modules", readOnly: true },
      ],
      securityContext: { privileged: true },
    }],
    volumes: [
      { name: "kube-proxy", configMap: { name: "kube-proxy", defaultMode: 420 } },
      { name: "xtables-lock", hostPath: { path: "/run/xtables.lock", type: "FileOrCreate" } },
      { name: "lib-modules", hostPath: { path: "/lib/modules", type: "" } },
    ],
  },
  {
    kind: "DaemonSet",
    name: "node-exporter",
    namespace: "monitoring",
    labels: {
      "app.kubernetes.io/name": "node-exporter",
      "app.kubernetes.io/component": "exporter",
    },
    annotations: { "prometheus.io/scrape": "true", "prometheus.io/port": "9100" },
    serviceAccountName: "node-exporter",
    restartPolicy: "Always",
    hostNetwork: true,
    hostPID: true,
    dnsPolicy: "ClusterFirstWithHostNet",
    securityContext: { runAsNonRoot: true, runAsUser: 65534 },
    weight: 0,
    containers: [{
      name: "node-exporter",
      image: "quay.io/prometheus/node-exporter:v1.8.2",
      args: ["--path.procfs=/host/proc", "--path.sysfs=/host/sys", "--path.rootfs=/host/root"],
      ports: [{ name: "metrics", containerPort: 9100, hostPort: 9100, protocol: "TCP" }],
      requests: { cpu: "50m", memory: "32Mi" },
      limits: { memory: "64Mi" },
      volumeMounts: [
        { name: "proc", mountPath: "/host/proc", readOnly: true },
        { name: "sys", mountPath: "/host/sys", readOnly: true },
        {
          name: "root",
          mountPath: "/host/root",
          readOnly: true,
          mountPropagation: "HostToContainer",
        },
      ],
      livenessProbe: httpProbe("/", 9100),
      readinessProbe: httpProbe("/", 9100),
    }],
    volumes: [
      { name: "proc", hostPath: { path: "/proc", type: "" } },
      { name: "sys", hostPath: { path: "/sys", type: "" } },
      { name: "root", hostPath: { path: "/", type: "" } },
    ],
  },
  {
    kind: "DaemonSet",
    name: "fluent-bit",
    namespace: "logging",
    labels: { "app.kubernetes.io/name": "fluent-bit", "app.kubernetes.io/instance": "fluent-bit" },
    annotations: { "fluentbit.io/exclude": "true" },
    serviceAccountName: "fluent-bit",
    restartPolicy: "Always",
    weight: 0,
    containers: [{
      name: "fluent-bit",
      image: "cr.fluentbit.io/fluent/fluent-bit:3.1.9",
      args: ["--workdir=/fluent-bit/etc", "--config=/fluent-bit/etc/conf/fluent-bit.conf"],
      ports: [{ name: "http", containerPort: 2020, protocol: "TCP" }],
      requests: { cpu: "50m", memory: "64Mi", "ephemeral-storage": "100Mi" },
      limits: { memory: "256Mi" },
      volumeMounts: [
        { name: "config", mountPath: "/fluent-bit/etc/conf" },
        { name: "varlog", mountPath: "/var/log" },
        { name: "etcmachineid", mountPath: "/etc/machine-id", readOnly: true },
      ],
      livenessProbe: httpProbe("/", "http"),
      readinessProbe: httpProbe("/api/v1/health", "http"),
    }],
    volumes: [
      { name: "config", configMap: { name: "fluent-bit", defaultMode: 420 } },
      { name: "varlog", hostPath: { path: "/var/log", type: "" } },
      { name: "etcmachineid", hostPath: { path: "/etc/machine-id", type: "File" } },
    ],
  },
  {
    kind: "CronJob",
    name: "db-backup",
    namespace: "payments",
    labels: { "app.kubernetes.io/name": "db-backup" },
    serviceAccountName: "db-backup",
    restartPolicy: "OnFailure",
    weight: 1,
    containers: [{
      name: "pg-dump",
      image: "docker.io/library/postgres:16.4",
      command: ["sh", "-c", "pg_dump -Fc -f /backup/ledger.dump ledger"],
      env: [
        { name: "PGHOST", value: "postgres.payments" },
        {
          name: "PGPASSWORD",
          valueFrom: { secretKeyRef: { name: "postgres-backup", key: "password" } },
        },
      ],
      requests: { cpu: "200m", memory: "256Mi" },
      limits: { memory: "512Mi" },
      volumeMounts: [{ name: "backup", mountPath: "/backup" }],
    }],
    volumes: [{ name: "backup", emptyDir: { sizeLimit: "2Gi" } }],
  },
  {
    kind: "Job",
    name: "report-generator",
    namespace: "default",
    labels: { app: "report-generator" },
    restartPolicy: "Never",
    failureRate: 0.3,
    weight: 1,
    containers: [{
      name: "report",
      image: "ghcr.io/acme/report-generator:0.9.3",
      args: ["--since=24h", "--output=s3://reports/daily"],
      env: [{ name: "AWS_REGION", value: "eu-west-1" }],
    }],
  },
  {
    kind: "CronJob",
    name: "image-prune",
    namespace: "kube-system",
    labels: { "app.kubernetes.io/name": "image-prune" },
    serviceAccountName: "image-prune",
    restartPolicy: "Never",
    failureRate: 0.1,
    weight: 1,
    containers: [{
      name: "prune",
      image: "docker.io/library/alpine:3.20.3",
      command: ["/bin/sh", "-c", "crictl rmi --prune"],
      requests: { cpu: "50m", memory: "32Mi" },
      limits: { cpu: "100m", memory: "64Mi" },
      volumeMounts: [{ name: "containerd-sock", mountPath: "/run/containerd/containerd.sock" }],
    }],
    volumes: [{
      name: "containerd-sock",
      hostPath: { path: "/run/containerd/containerd.sock", type: "Socket" },
    }],
  },
  {
    kind: "Static",
    name: "nginx-proxy",
    namespace: "kube-system",
    labels: { "addonmanager.kubernetes.io/mode": "Reconcile", "k8s-app": "kube-nginx" },
    restartPolicy: "Always",
    hostNetwork: true,
    priorityClassName: "system-node-critical",
    priority: SYSTEM_NODE_CRITICAL,
    nodeSelector: { "kubernetes.io/os": "linux" },
    weight: 0,
    containers: [{
      name: "nginx-proxy",
      image: "docker.io/library/nginx:1.25.2-alpine",
      requests: { cpu: "25m", memory: "32M" },
      volumeMounts: [{ name: "etc-nginx", mountPath: "/etc/nginx" }],
      livenessProbe: httpProbe("/healthz", 8081),
      readinessProbe: httpProbe("/healthz", 8081),
    }],
    volumes: [{ name: "etc-nginx", hostPath: { path: "/etc/nginx", type: "" } }],
  },
];
