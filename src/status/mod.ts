/**
 * The kubelet's pod status rules in one place: phase (`getPhase`), the
 * conditions it owns, container statuses, the status of a pod no runtime
 * runs yet, the QoS class and the terminal-phase rule. Pure functions of
 * JSON-shaped specs and statuses; every stage may use them.
 *
 * @module
 */

export {
  anyRegularContainerStarted,
  type DerivedPhase,
  isSidecar,
  isTerminalPhase,
  phaseFromStatuses,
  type PhaseInput,
  podPhaseOf,
  type RestartPolicy,
  restartPolicyOf,
  type StatusesPhaseInput,
} from "./phase.ts";
export {
  CONDITION_REASON,
  type ConditionDraft,
  conditionOf,
  type ConditionStatuses,
  containersReadyCondition,
  findCondition,
  initializedCondition,
  KUBELET_CONDITIONS,
  readyCondition,
} from "./conditions.ts";
export {
  CONTAINER_REASON,
  type ContainerKind,
  containerReadiness,
  type PodContainerStatuses,
  podContainerStatuses,
  type ReadinessInput,
  STATUS_LISTS,
  waitingContainerStatus,
} from "./container_statuses.ts";
export {
  type OverlayInput,
  overlayStatus,
  pendingStatus,
  type PendingStatusOptions,
} from "./pod_status.ts";
export { type QosClass, qosClassOf } from "./qos.ts";
