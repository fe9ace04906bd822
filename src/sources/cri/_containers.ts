/**
 * CRI container records as a pod's containers: instances grouped by name,
 * each group's spec (image, ports, termination message settings from the
 * kubelet's annotations) and status (state, last state, restart count,
 * image, ready and started by the rules of `src/status/`).
 *
 * @module
 */

import type { JsonObject } from "../../model/json.ts";
import { KUBELET_ANNOTATION, KUBELET_LABEL } from "../../model/kubelet_keys.ts";
import { CONTAINER_REASON, containerReadiness } from "../../status/mod.ts";
import {
  criTime,
  freeText,
  identifier,
  ipFamily,
  MAX_MESSAGE_LENGTH,
  MAX_NAME_LENGTH,
  MAX_SHORT_TEXT_LENGTH,
  type RejectHandler,
  sortableTime,
} from "./_sanitize.ts";
import { type Container, CONTAINER_STATE, type ContainerStatus } from "./_types.ts";

/** A container as listed, plus its inspected status when known. */
export interface ContainerInput {
  readonly container: Container;
  readonly status?: ContainerStatus | undefined;
}

/** One container of a pod: every instance the runtime holds, newest first, and what they give. */
export interface ContainerGroup {
  readonly name: string;
  readonly kind: "init" | "regular" | "ephemeral";
  /** Newest instance first. */
  readonly instances: readonly ContainerInput[];
  readonly spec: JsonObject;
  readonly status: JsonObject;
}

/** A pod's containers by kind. */
export interface ContainerGroups {
  readonly init: ContainerGroup[];
  readonly regular: ContainerGroup[];
  readonly ephemeral: ContainerGroup[];
}

function containerName(input: ContainerInput): string | undefined {
  const meta = input.status?.metadata ?? input.container.metadata;
  return identifier(
    meta?.name || input.container.labels?.[KUBELET_LABEL.containerName],
    MAX_NAME_LENGTH,
  );
}

/**
 * When an instance was created (its status's time, else the list's), for ordering.
 *
 * @param input A container instance.
 * @returns CRI nanoseconds; 0 when unknown.
 */
export function containerCreatedAt(input: ContainerInput): number {
  return sortableTime(input.status?.createdAt || input.container.createdAt);
}

function containerAttempt(input: ContainerInput): number {
  return (input.status?.metadata ?? input.container.metadata)?.attempt ?? 0;
}

/** Newest first: creation time, then attempt, then ID. */
function compareInstances(a: ContainerInput, b: ContainerInput): number {
  return containerCreatedAt(b) - containerCreatedAt(a) ||
    containerAttempt(b) - containerAttempt(a) ||
    (a.container.id < b.container.id ? 1 : a.container.id > b.container.id ? -1 : 0);
}

function annotation(input: ContainerInput, key: string): string | undefined {
  const value = (input.status?.annotations ?? input.container.annotations)?.[key];
  return typeof value === "string" ? value : undefined;
}

/**
 * Groups a pod's container instances by name and maps each group: its spec
 * (from the newest instance), its status (newest instance as `state`, the
 * one before as `lastState`), its kind (the kubelet's container type
 * annotation).
 *
 * @param containers Every instance of the pod's containers.
 * @param runtimeName Prefix of container IDs.
 * @param onReject Receives each skipped instance or field.
 * @returns Init containers in the order they ran; regular and ephemeral ones by name.
 */
export function groupContainers(
  containers: readonly ContainerInput[],
  runtimeName: string,
  onReject: RejectHandler,
): ContainerGroups {
  const byName = new Map<string, ContainerInput[]>();
  for (const input of containers) {
    const name = containerName(input);
    if (name === undefined) {
      onReject(
        "invalid_identity",
        `container ${JSON.stringify(input.container.id)} has no valid name`,
      );
      continue;
    }
    let list = byName.get(name);
    if (list === undefined) byName.set(name, list = []);
    list.push(input);
  }
  const groups: ContainerGroups = { init: [], regular: [], ephemeral: [] };
  for (const [name, list] of byName) {
    list.sort(compareInstances);
    const newest = list[0]!;
    const type = annotation(newest, KUBELET_ANNOTATION.containerType);
    const kind = type === "init" ? "init" : type === "ephemeral" ? "ephemeral" : "regular";
    groups[kind].push({
      name,
      kind,
      instances: list,
      spec: containerSpec(name, newest, onReject),
      status: containerStatus(name, kind, list, runtimeName, onReject),
    });
  }
  // Regular and ephemeral containers by name: the spec order is not in CRI, and
  // a stable order keeps unchanged pods unchanged. Init containers in the order
  // they ran (newest instance creation), as that order is their meaning.
  groups.regular.sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  groups.ephemeral.sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  groups.init.sort((a, b) =>
    containerCreatedAt(a.instances[0]!) - containerCreatedAt(b.instances[0]!) ||
    (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)
  );
  return groups;
}

function imageOf(input: ContainerInput): { image: string; userImage: string; ref: string } {
  const spec = input.status?.image ?? input.container.image;
  const image = freeText(spec?.image, MAX_SHORT_TEXT_LENGTH);
  const userImage = freeText(spec?.userSpecifiedImage, MAX_SHORT_TEXT_LENGTH) || image;
  const ref = freeText(
    input.status?.imageRef || input.container.imageRef || input.status?.imageId ||
      input.container.imageId,
    MAX_SHORT_TEXT_LENGTH,
  );
  return { image, userImage, ref };
}

function containerSpec(name: string, newest: ContainerInput, onReject: RejectHandler): JsonObject {
  const spec: JsonObject = { name };
  const { userImage } = imageOf(newest);
  if (userImage !== "") spec.image = userImage;
  const ports = containerPorts(newest, onReject);
  if (ports !== undefined) spec.ports = ports;
  const path = annotation(newest, KUBELET_ANNOTATION.terminationMessagePath);
  if (path !== undefined && identifier(path, 4096) !== undefined) {
    spec.terminationMessagePath = path;
  }
  const policy = annotation(newest, KUBELET_ANNOTATION.terminationMessagePolicy);
  if (policy === "File" || policy === "FallbackToLogsOnError") {
    spec.terminationMessagePolicy = policy;
  }
  return spec;
}

const PORT_PROTOCOLS: ReadonlySet<string> = new Set(["TCP", "UDP", "SCTP"]);
const MAX_PORTS_JSON_LENGTH = 64 * 1024;

/**
 * Parses the kubelet's `io.kubernetes.container.ports` annotation (the JSON of
 * `[]v1.ContainerPort`), keeping only well-formed ports: one bad entry drops
 * the whole annotation (reported), as it cannot be trusted.
 */
function containerPorts(input: ContainerInput, onReject: RejectHandler): JsonObject[] | undefined {
  const raw = annotation(input, KUBELET_ANNOTATION.ports);
  if (raw === undefined || raw === "" || raw === "null") return undefined;
  const reject = (why: string) => {
    onReject(
      "invalid_annotation",
      `ports of container ${JSON.stringify(input.container.id)} dropped: ${why}`,
    );
    return undefined;
  };
  if (raw.length > MAX_PORTS_JSON_LENGTH) return reject("too long");
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return reject("not JSON");
  }
  if (!Array.isArray(parsed) || parsed.length > 1024) return reject("not a list of ports");
  const ports: JsonObject[] = [];
  for (const item of parsed) {
    if (typeof item !== "object" || item === null || Array.isArray(item)) {
      return reject("not an object");
    }
    const p = item as Record<string, unknown>;
    if (!isPort(p.containerPort, 1)) return reject("bad containerPort");
    const port: JsonObject = {};
    if (p.name !== undefined) {
      if (identifier(p.name, 15) === undefined) return reject("bad name");
      port.name = p.name as string;
    }
    if (p.hostPort !== undefined) {
      if (!isPort(p.hostPort, 0)) return reject("bad hostPort");
      if (p.hostPort !== 0) port.hostPort = p.hostPort as number;
    }
    port.containerPort = p.containerPort as number;
    const protocol = p.protocol ?? "TCP";
    if (typeof protocol !== "string" || !PORT_PROTOCOLS.has(protocol)) {
      return reject("bad protocol");
    }
    port.protocol = protocol;
    if (p.hostIP !== undefined && p.hostIP !== "") {
      if (typeof p.hostIP !== "string" || ipFamily(p.hostIP) === undefined) {
        return reject("bad hostIP");
      }
      port.hostIP = p.hostIP;
    }
    ports.push(port);
  }
  return ports.length > 0 ? ports : undefined;
}

function isPort(value: unknown, min: number): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= min && value <= 65535;
}

function parseCount(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d{1,10}$/.test(value)) return undefined;
  const n = Number(value);
  return n <= 2147483647 ? n : undefined;
}

/**
 * The pod's termination grace period, from the newest instance carrying the
 * kubelet's annotation.
 *
 * @param containers Every instance of the pod's containers.
 * @returns Seconds, or `undefined` when no instance says.
 */
export function terminationGracePeriod(containers: readonly ContainerInput[]): number | undefined {
  let best: { at: number; value: number } | undefined;
  for (const input of containers) {
    const raw = annotation(input, KUBELET_ANNOTATION.podTerminationGracePeriod);
    if (raw === undefined || !/^\d{1,15}$/.test(raw)) continue;
    const at = containerCreatedAt(input);
    if (best === undefined || at > best.at) best = { at, value: Number(raw) };
  }
  return best?.value;
}

function containerStatus(
  name: string,
  kind: ContainerGroup["kind"],
  instances: readonly ContainerInput[],
  runtimeName: string,
  onReject: RejectHandler,
): JsonObject {
  const newest = instances[0]!;
  const previous = instances[1];
  const state = containerState(newest, runtimeName, onReject);
  const { image, ref } = imageOf(newest);
  // CRI cannot tell a sidecar: init containers count as regular ones, and no
  // probe results are known (the kubelet's prober is not in CRI).
  const { ready, started } = containerReadiness({ kind, state });
  const status: JsonObject = {
    name,
    state,
    lastState: previous === undefined ? {} : containerState(previous, runtimeName, onReject),
    ready,
    restartCount: parseCount(annotation(newest, KUBELET_ANNOTATION.restartCount)) ??
      containerAttempt(newest),
    image,
    imageID: ref,
    containerID: `${runtimeName}://${newest.container.id}`,
    started,
  };
  return status;
}

/** The kubelet's state rules for one container instance. */
function containerState(
  input: ContainerInput,
  runtimeName: string,
  onReject: RejectHandler,
): JsonObject {
  const id = JSON.stringify(input.container.id);
  const st = input.status;
  const state = st?.state ?? input.container.state;
  switch (state) {
    case CONTAINER_STATE.running: {
      const running: JsonObject = {};
      const startedAt = st
        ? criTime(st.startedAt, onReject, `container ${id} startedAt`)
        : undefined;
      if (startedAt !== undefined) running.startedAt = startedAt;
      return { running };
    }
    case CONTAINER_STATE.created:
      return { waiting: { reason: CONTAINER_REASON.containerCreating } };
    case CONTAINER_STATE.exited: {
      if (st === undefined) {
        // Exited, but its status could not be read: the kubelet's wording for a
        // container it cannot locate.
        return {
          terminated: {
            exitCode: 137,
            reason: CONTAINER_REASON.statusUnknown,
            message: "The container status could not be read from the runtime",
            containerID: `${runtimeName}://${input.container.id}`,
          },
        };
      }
      const code = Number.isInteger(st.exitCode) ? st.exitCode : 0;
      const terminated: JsonObject = {
        exitCode: code,
        reason: freeText(st.reason, MAX_SHORT_TEXT_LENGTH) ||
          (code === 0 ? CONTAINER_REASON.completed : CONTAINER_REASON.error),
      };
      const message = freeText(st.message, MAX_MESSAGE_LENGTH);
      if (message !== "") terminated.message = message;
      const startedAt = criTime(st.startedAt, onReject, `container ${id} startedAt`);
      if (startedAt !== undefined) terminated.startedAt = startedAt;
      const finishedAt = criTime(st.finishedAt, onReject, `container ${id} finishedAt`);
      if (finishedAt !== undefined) terminated.finishedAt = finishedAt;
      terminated.containerID = `${runtimeName}://${input.container.id}`;
      return { terminated };
    }
    default:
      if (state !== CONTAINER_STATE.unknown) {
        onReject("invalid_status", `container ${id} has unknown state ${state}`);
      }
      return { waiting: { reason: CONTAINER_REASON.statusUnknown } };
  }
}
