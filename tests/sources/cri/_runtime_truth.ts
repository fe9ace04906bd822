/**
 * A tiny synchronous model of a CRI runtime for the CRI state's tests: the
 * runtime's truth (sandboxes and containers, each as a list item and a
 * status), its own clock in ns, and the events containerd 1.7.24 sends for
 * each call, in its order and shape (issue 37's capture): a sandbox's
 * CREATED and STARTED carry its status and its containers'; a container's
 * events carry its sandbox's status and every container of that sandbox
 * still there; the sandbox's DELETED carries no status. Items and statuses
 * are replaced, never changed in place, as a client decodes new ones.
 *
 * @module
 */

import { KUBELET_ANNOTATION, KUBELET_LABEL } from "../../../src/model/kubelet_keys.ts";
import {
  type Container,
  CONTAINER_EVENT_TYPE,
  CONTAINER_STATE,
  type ContainerEventResponse,
  type ContainerStatus,
  NAMESPACE_MODE,
  POD_SANDBOX_STATE,
  type PodSandbox,
  type PodSandboxStatus,
} from "../../../src/sources/cri/mod.ts";

/** What one relist reads at one instant: every item and its status. */
export interface TruthRead {
  readonly sandboxes: readonly PodSandbox[];
  readonly containers: readonly Container[];
  readonly sandboxStatuses: ReadonlyMap<string, PodSandboxStatus>;
  readonly containerStatuses: ReadonlyMap<string, ContainerStatus>;
}

/** The runtime model. Every call moves its clock on by 1 µs and stamps its events then. */
export class RuntimeTruth {
  /** The runtime's clock, ns since the epoch. */
  now: number;
  readonly #sandboxes = new Map<string, PodSandboxStatus>();
  readonly #containers = new Map<string, { status: ContainerStatus; sandboxId: string }>();

  /** @param startNs The clock's start. */
  constructor(startNs: number) {
    this.now = startNs;
  }

  /** @returns IDs of the sandboxes there. */
  sandboxIds(): string[] {
    return [...this.#sandboxes.keys()];
  }

  /** @returns IDs of the containers there, with their sandbox, name, attempt and state. */
  containers(): { id: string; sandboxId: string; name: string; attempt: number; state: number }[] {
    return [...this.#containers].map(([id, c]) => ({
      id,
      sandboxId: c.sandboxId,
      name: c.status.metadata!.name,
      attempt: c.status.metadata!.attempt,
      state: c.status.state,
    }));
  }

  /** @returns The state of a sandbox, if there. */
  sandboxState(id: string): number | undefined {
    return this.#sandboxes.get(id)?.state;
  }

  /** RunPodSandbox: CREATED, STARTED. */
  runSandbox(id: string, uid: string, name: string): ContainerEventResponse[] {
    const at = this.#tick();
    this.#sandboxes.set(id, {
      id,
      metadata: { name, namespace: "default", uid, attempt: 0 },
      state: POD_SANDBOX_STATE.ready,
      createdAt: at,
      network: { ip: `10.77.0.${this.#sandboxes.size + 2}`, additionalIps: [] },
      linux: {
        namespaces: {
          options: {
            network: NAMESPACE_MODE.pod,
            pid: NAMESPACE_MODE.container,
            ipc: NAMESPACE_MODE.pod,
          },
        },
      },
      labels: {
        app: name,
        [KUBELET_LABEL.podName]: name,
        [KUBELET_LABEL.podNamespace]: "default",
        [KUBELET_LABEL.podUid]: uid,
      },
      annotations: {},
      runtimeHandler: "",
    });
    return [
      this.#event(id, CONTAINER_EVENT_TYPE.created, id),
      this.#event(id, CONTAINER_EVENT_TYPE.started, id, this.#tick()),
    ];
  }

  /** CreateContainer: CREATED. */
  createContainer(
    id: string,
    sandboxId: string,
    name: string,
    attempt: number,
  ): ContainerEventResponse[] {
    const sandbox = this.#sandboxes.get(sandboxId)!;
    const at = this.#tick();
    const image = { image: "localhost/real-cri/busybox:1", userSpecifiedImage: "" };
    this.#containers.set(id, {
      sandboxId,
      status: {
        id,
        metadata: { name, attempt },
        state: CONTAINER_STATE.created,
        createdAt: at,
        startedAt: 0,
        finishedAt: 0,
        exitCode: 0,
        image,
        imageRef: "sha256:0123abcd",
        reason: "",
        message: "",
        labels: {
          [KUBELET_LABEL.podName]: sandbox.metadata!.name,
          [KUBELET_LABEL.podNamespace]: "default",
          [KUBELET_LABEL.podUid]: sandbox.metadata!.uid,
          [KUBELET_LABEL.containerName]: name,
        },
        annotations: {
          [KUBELET_ANNOTATION.restartCount]: String(attempt),
          [KUBELET_ANNOTATION.containerType]: "container",
        },
        logPath: "",
        imageId: "",
      },
    });
    return [this.#event(sandboxId, CONTAINER_EVENT_TYPE.created, id, at)];
  }

  /** StartContainer: STARTED. */
  startContainer(id: string): ContainerEventResponse[] {
    const c = this.#containers.get(id)!;
    const at = this.#tick();
    c.status = { ...c.status, state: CONTAINER_STATE.running, startedAt: at };
    return [this.#event(c.sandboxId, CONTAINER_EVENT_TYPE.started, id, at)];
  }

  /** StopContainer (or the process exits): STOPPED. */
  stopContainer(id: string, exitCode = 0): ContainerEventResponse[] {
    const c = this.#containers.get(id)!;
    const at = this.#tick();
    const reason = exitCode === 0 ? "Completed" : "Error";
    c.status = { ...c.status, state: CONTAINER_STATE.exited, finishedAt: at, exitCode, reason };
    return [this.#event(c.sandboxId, CONTAINER_EVENT_TYPE.stopped, id, at)];
  }

  /** StopPodSandbox: STOPPED of each running container, then the sandbox's, NOTREADY. */
  stopSandbox(id: string): ContainerEventResponse[] {
    const events: ContainerEventResponse[] = [];
    for (const [cid, c] of this.#containers) {
      if (c.sandboxId === id && c.status.state === CONTAINER_STATE.running) {
        events.push(...this.stopContainer(cid, 137));
      }
    }
    const at = this.#tick();
    this.#sandboxes.set(id, { ...this.#sandboxes.get(id)!, state: POD_SANDBOX_STATE.notReady });
    events.push(this.#event(id, CONTAINER_EVENT_TYPE.stopped, id, at));
    return events;
  }

  /** RemoveContainer: DELETED, its statuses without it. */
  removeContainer(id: string): ContainerEventResponse[] {
    const c = this.#containers.get(id)!;
    const at = this.#tick();
    this.#containers.delete(id);
    return [this.#event(c.sandboxId, CONTAINER_EVENT_TYPE.deleted, id, at)];
  }

  /**
   * RemovePodSandbox: its containers' DELETED, then its own: without a
   * status as containerd 1.7 sends it, or `withStatus` its last one (a
   * runtime that reads the status before it removes the sandbox).
   */
  removeSandbox(id: string, withStatus = false): ContainerEventResponse[] {
    const events: ContainerEventResponse[] = [];
    for (const [cid, c] of this.#containers) {
      if (c.sandboxId === id) events.push(...this.removeContainer(cid));
    }
    const at = this.#tick();
    const last = this.#sandboxes.get(id)!;
    this.#sandboxes.delete(id);
    events.push({
      containerId: id,
      containerEventType: CONTAINER_EVENT_TYPE.deleted,
      createdAt: at,
      podSandboxStatus: withStatus ? last : null,
      containersStatuses: [],
    });
    return events;
  }

  /** @returns Everything, as a relist reading now would. */
  read(): TruthRead {
    const sandboxStatuses = new Map(this.#sandboxes);
    const containerStatuses = new Map([...this.#containers].map(([id, c]) => [id, c.status]));
    return {
      sandboxes: [...this.#sandboxes.values()].map((s) => ({
        id: s.id,
        metadata: s.metadata,
        state: s.state,
        createdAt: s.createdAt,
        labels: s.labels,
        annotations: s.annotations,
        runtimeHandler: s.runtimeHandler,
      })),
      containers: [...this.#containers.values()].map(({ status: s, sandboxId }) => ({
        id: s.id,
        podSandboxId: sandboxId,
        metadata: s.metadata,
        image: s.image,
        imageRef: s.imageRef,
        state: s.state,
        createdAt: s.createdAt,
        labels: s.labels,
        annotations: s.annotations,
        imageId: s.imageId,
      })),
      sandboxStatuses,
      containerStatuses,
    };
  }

  #tick(): number {
    this.now += 1_000;
    return this.now;
  }

  #event(
    sandboxId: string,
    type: number,
    containerId: string,
    at = this.now,
  ): ContainerEventResponse {
    const containersStatuses: ContainerStatus[] = [];
    for (const c of this.#containers.values()) {
      if (c.sandboxId === sandboxId) containersStatuses.push(c.status);
    }
    return {
      containerId,
      containerEventType: type,
      createdAt: at,
      podSandboxStatus: this.#sandboxes.get(sandboxId) ?? null,
      containersStatuses,
    };
  }
}
