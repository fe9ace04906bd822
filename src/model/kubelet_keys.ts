/**
 * The kubelet's own vocabulary on pods and containers, shared by every stage
 * that reads or writes it: the labels and annotations it puts on CRI
 * sandboxes and containers (`kubelet/types/labels.go`,
 * `kuberuntime/labels.go`), and the `kubernetes.io/config.*` annotations its
 * config sources put on the pods they read.
 *
 * @module
 */

/** Labels the kubelet puts on sandboxes and containers (`kubelet/types/labels.go`). */
export const KUBELET_LABEL = {
  podName: "io.kubernetes.pod.name",
  podNamespace: "io.kubernetes.pod.namespace",
  podUid: "io.kubernetes.pod.uid",
  containerName: "io.kubernetes.container.name",
} as const;

/** Annotations the kubelet puts on containers (`kuberuntime/labels.go`). */
export const KUBELET_ANNOTATION = {
  podDeletionGracePeriod: "io.kubernetes.pod.deletionGracePeriod",
  podTerminationGracePeriod: "io.kubernetes.pod.terminationGracePeriod",
  containerHash: "io.kubernetes.container.hash",
  containerHashWithoutResources: "io.kubernetes.container.hashWithoutResources",
  restartCount: "io.kubernetes.container.restartCount",
  terminationMessagePath: "io.kubernetes.container.terminationMessagePath",
  terminationMessagePolicy: "io.kubernetes.container.terminationMessagePolicy",
  preStopHandler: "io.kubernetes.container.preStopHandler",
  ports: "io.kubernetes.container.ports",
  containerType: "io.kubernetes.container.type",
} as const;

/** Annotations the kubelet's config sources put on the pods they read. */
export const CONFIG_ANNOTATION = {
  source: "kubernetes.io/config.source",
  hash: "kubernetes.io/config.hash",
  seen: "kubernetes.io/config.seen",
  mirror: "kubernetes.io/config.mirror",
} as const;
