/**
 * A simulated CRI runtime: an in-memory `runtime.v1.RuntimeService` state
 * machine (pod sandboxes and containers with their states, IPs, attempts,
 * exit codes, OOM kills and events). Tests and benchmarks use it in process
 * (it implements the same interface as {@linkcode CriClient}) or over a UNIX
 * socket through `cri_server.ts`, so the CRI client and relist code run
 * exactly as in production.
 *
 * It also has the controls a real node has and a test needs: a container
 * exits or is OOM-killed, a sandbox dies, a call fails, the runtime is down,
 * stored data is corrupted on purpose.
 *
 * `GetContainerEvents` sends the events containerd 1.7 sends, in its order
 * and with the statuses it puts in them (the sandbox's own CREATED, STARTED,
 * STOPPED and DELETED, the last with no status), as captured in
 * `tests/_fixtures/cri_events_containerd_1_7.json`. Unlike containerd 1.7,
 * every subscription gets every event, and none is kept while there is no
 * subscription (containerd 1.7 hands each event to one subscriber from a
 * shared queue, which holds up to 1000 while nobody reads it).
 *
 * @module
 */

import {
  containerInfoOf,
  containerOf,
  containerStatusOf,
  copyMap,
  fnvHex,
  matches,
  sandboxOf,
  sandboxStatusOf,
  type SimContainer,
  type SimSandbox,
} from "./_runtime_records.ts";

import type { Clock } from "../../clock.ts";
import { systemClock } from "../../clock.ts";
import {
  CONTAINER_EVENT_TYPE,
  CONTAINER_STATE,
  type ContainerEventResponse,
  type ContainerIdRequest,
  type ContainerStatusRequest,
  type ContainerStatusResponse,
  type CreateContainerRequest,
  type CreateContainerResponse,
  CRI_STATUS,
  CriCallError,
  type CriMethodName,
  type EmptyResponse,
  type GetEventsRequest,
  type ListContainersRequest,
  type ListContainersResponse,
  type ListPodSandboxRequest,
  type ListPodSandboxResponse,
  type MessageInit,
  NAMESPACE_MODE,
  POD_SANDBOX_STATE,
  type PodSandboxIdRequest,
  type PodSandboxStatusRequest,
  type PodSandboxStatusResponse,
  type RunPodSandboxRequest,
  type RunPodSandboxResponse,
  type RuntimeService,
  type StatusRequest,
  type StatusResponse,
  type StopContainerRequest,
  type VersionRequest,
  type VersionResponse,
} from "../../sources/cri/mod.ts";
import { IpPool } from "../_ip_pool.ts";
import { SIMULATED_RUNTIME_NAME } from "../simulated_runtime_name.ts";
import { CallFaults } from "./_call_faults.ts";
import { SimProcessTable } from "./_process_table.ts";
import { KILLED_EXIT_CODE, SimRuntimeState } from "./_runtime_state.ts";

export type { SimContainer, SimSandbox };

/** Options of {@linkcode SimCriRuntime}. */
export interface SimCriRuntimeOptions {
  /** Source of creation, start and finish times. @default {systemClock} */
  clock?: Clock;
  /** `runtimeName` of Version, the prefix of container IDs. @default {"pods-api-simulated"} */
  runtimeName?: string;
  /** Whether GetContainerEvents is implemented (false: UNIMPLEMENTED, as containerd 1.6). @default {true} */
  eventsImplemented?: boolean;
  /**
   * Whether each event carries its sandbox's status and the statuses of all
   * its containers, as containerd 1.7+ and CRI-O send them (false: the bare
   * event). @default {true}
   */
  eventStatuses?: boolean;
}

/**
 * An in-memory CRI runtime. Every read returns fresh objects, as decoding a
 * gRPC answer does, so callers cannot rely on object identity by accident.
 *
 * @example Usage
 * ```ts
 * import { SimCriRuntime } from "./cri_runtime.ts";
 * const runtime = new SimCriRuntime();
 * const { podSandboxId } = await runtime.runPodSandbox({
 *   config: { metadata: { name: "web", namespace: "default", uid: "u1" } },
 * });
 * (await runtime.listPodSandbox({})).items.length; // 1
 * runtime.calls.listPodSandbox; // 1
 * ```
 */
export class SimCriRuntime implements RuntimeService {
  /** Whether GetContainerEvents is served (false: UNIMPLEMENTED). */
  eventsImplemented: boolean;
  readonly #runtimeName: string;
  readonly #state: SimRuntimeState;
  readonly #faults = new CallFaults();
  readonly #processes: SimProcessTable;

  /** @param options Clock, runtime name, events switches. */
  constructor(options: SimCriRuntimeOptions = {}) {
    this.#state = new SimRuntimeState({
      clock: options.clock ?? systemClock,
      // A /16: about 65000 pods.
      ips: new IpPool({ prefix: "10.88" }),
      eventStatuses: options.eventStatuses ?? true,
    });
    this.#processes = new SimProcessTable(this.#state.sandboxes, this.#state.containers);
    this.#runtimeName = options.runtimeName ?? SIMULATED_RUNTIME_NAME;
    this.eventsImplemented = options.eventsImplemented ?? true;
  }

  /** Calls per method since creation or {@linkcode SimCriRuntime.resetCalls}. */
  get calls(): Record<CriMethodName, number> {
    return this.#faults.calls;
  }

  /** While true, every call fails with UNAVAILABLE (the runtime is down). */
  get down(): boolean {
    return this.#faults.down;
  }

  set down(value: boolean) {
    this.#faults.down = value;
  }

  /** Whether events carry the statuses of their sandbox and its containers. */
  get eventStatuses(): boolean {
    return this.#state.eventStatuses;
  }

  set eventStatuses(value: boolean) {
    this.#state.eventStatuses = value;
  }

  // ---------------------------------------------------------------- controls

  /** Sets every call counter back to 0. */
  resetCalls(): void {
    this.#faults.resetCalls();
  }

  /**
   * Makes the next `times` calls of `method` fail with `code`.
   *
   * @param method The method.
   * @param code A gRPC status code ({@linkcode CRI_STATUS}).
   * @param options How many calls fail and with what message.
   */
  failNext(
    method: CriMethodName,
    code: number,
    options: { times?: number; message?: string } = {},
  ): void {
    this.#faults.failNext(method, code, options);
  }

  /**
   * Makes the next call of `method` never answer (a hung runtime); the
   * caller's deadline has to end it.
   *
   * @param method The method.
   */
  stallNext(method: CriMethodName): void {
    this.#faults.stallNext(method);
  }

  /**
   * Ends a running container, as its process exiting would.
   *
   * @param containerId The container.
   * @param options Exit code, and the runtime's reason and message.
   * @throws {RangeError} When the container does not exist.
   */
  exitContainer(
    containerId: string,
    options: { exitCode: number; reason?: string; message?: string },
  ): void {
    const c = this.#state.container(containerId);
    if (c.state === CONTAINER_STATE.exited) return;
    c.state = CONTAINER_STATE.exited;
    if (c.startedAt === 0) c.startedAt = this.#state.nowNs();
    c.finishedAt = this.#state.nowNs();
    c.exitCode = options.exitCode;
    c.reason = options.reason ?? (options.exitCode === 0 ? "Completed" : "Error");
    c.message = options.message ?? "";
    this.#state.emit(c.id, CONTAINER_EVENT_TYPE.stopped, c.sandboxId);
  }

  /**
   * Makes a sandbox NOTREADY, as when its infra process dies.
   *
   * @param podSandboxId The sandbox.
   */
  killSandbox(podSandboxId: string): void {
    this.setSandboxState(podSandboxId, POD_SANDBOX_STATE.notReady);
  }

  /**
   * Sets a sandbox's state, with its event when it changes (STARTED for
   * READY, STOPPED for NOTREADY).
   *
   * @param podSandboxId The sandbox.
   * @param state A `POD_SANDBOX_STATE` value.
   */
  setSandboxState(podSandboxId: string, state: number): void {
    const s = this.#state.sandbox(podSandboxId);
    if (s.state === state) return;
    s.state = state;
    const type = state === POD_SANDBOX_STATE.ready
      ? CONTAINER_EVENT_TYPE.started
      : CONTAINER_EVENT_TYPE.stopped;
    this.#state.emit(s.id, type, s.id);
  }

  /**
   * Replaces a sandbox's pod IPs (its own allocated address goes back to the
   * pool), as a CNI plugin with its own IPAM would: lets a mirror of another
   * pod model (`sim_cri_bridge.ts`) keep that model's IPs. Addresses outside
   * the runtime's prefix are never returned to its pool.
   *
   * @param podSandboxId The sandbox.
   * @param ips The primary IP (`""` for none) and any further ones.
   * @throws {CriCallError} When the sandbox does not exist (NOT_FOUND).
   */
  setSandboxIps(
    podSandboxId: string,
    ips: { ip: string; additionalIps?: readonly string[] },
  ): void {
    const s = this.#state.sandbox(podSandboxId);
    this.#state.releaseIp(s);
    s.ip = ips.ip;
    s.additionalIps = [...(ips.additionalIps ?? [])];
  }

  /**
   * Runs `fn`, and sends the events it causes when it ends, each with its
   * sandbox's and containers' statuses as they are then (or, for a sandbox
   * gone by then, as they were when it happened). The simulated node's
   * bridge makes a pod in several steps a real runtime takes in one
   * (RunPodSandbox, then the pod's IP and times through the controls above):
   * within a hold, no event shows a pod half made. Events of calls other
   * callers make meanwhile are held too; a hold within a hold adds to it.
   *
   * @param fn The calls and controls.
   * @returns What `fn` returns.
   */
  holdEventStatuses<T>(fn: () => Promise<T>): Promise<T> {
    return this.#state.hold(fn);
  }

  /**
   * Gives a test direct access to a stored sandbox (for hostile data).
   *
   * @param podSandboxId The sandbox.
   * @param edit Changes it in place.
   */
  tamperSandbox(podSandboxId: string, edit: (sandbox: SimSandbox) => void): void {
    edit(this.#state.sandbox(podSandboxId));
  }

  /**
   * Gives a test direct access to a stored container (for hostile data).
   *
   * @param containerId The container.
   * @param edit Changes it in place.
   */
  tamperContainer(containerId: string, edit: (container: SimContainer) => void): void {
    edit(this.#state.container(containerId));
  }

  /**
   * The running container whose init process has this host PID, as a
   * simulated `/proc` sees it.
   *
   * @param pid A host PID.
   * @returns The container, its pod's UID and its cgroup directory, or `undefined`.
   */
  processOf(pid: number): { containerId: string; podUid: string; cgroupDir: string } | undefined {
    return this.#processes.processOf(pid);
  }

  /** Number of sandboxes held. */
  get sandboxCount(): number {
    return this.#state.sandboxes.size;
  }

  /** Number of containers held. */
  get containerCount(): number {
    return this.#state.containers.size;
  }

  // ---------------------------------------------------------------- helpers

  /**
   * An ID for the next `CreateContainer` (used once; ignored if taken). The
   * simulated node's bridge sets it so the runtime's container IDs match the
   * ones in the simulated pods' statuses, as a real kubelet's would.
   */
  preferredContainerId: string | undefined;

  // ---------------------------------------------------------------- RuntimeService

  /** `Version`. */
  version(_request: MessageInit<VersionRequest> = {}): Promise<VersionResponse> {
    return this.#faults.run("version", () => ({
      version: "0.1.0",
      runtimeName: this.#runtimeName,
      runtimeVersion: "0.1.0",
      runtimeApiVersion: "v1",
    }));
  }

  /** `Status`: always ready. */
  status(_request: MessageInit<StatusRequest> = {}): Promise<StatusResponse> {
    return this.#faults.run("status", () => ({
      status: {
        conditions: [
          { type: "RuntimeReady", status: true, reason: "", message: "" },
          { type: "NetworkReady", status: true, reason: "", message: "" },
        ],
      },
      info: {},
    }));
  }

  /** `RunPodSandbox`: a READY sandbox with an IP (none for host network). */
  runPodSandbox(request: MessageInit<RunPodSandboxRequest>): Promise<RunPodSandboxResponse> {
    return this.#faults.run("runPodSandbox", () => {
      const config = request.config;
      const meta = config?.metadata;
      if (!meta?.name || !meta.uid || !meta.namespace) {
        throw new CriCallError("sandbox config must include metadata", {
          code: CRI_STATUS.invalidArgument,
          method: "RunPodSandbox",
        });
      }
      const ns = config?.linux?.securityContext?.namespaceOptions;
      const hostNetwork = ns?.network === NAMESPACE_MODE.node;
      const id = this.#state.newId("sandbox");
      const ip = hostNetwork ? "" : this.#state.allocateIp();
      const sandbox: SimSandbox = {
        id,
        name: meta.name,
        uid: meta.uid,
        namespace: meta.namespace,
        attempt: meta.attempt ?? 0,
        state: POD_SANDBOX_STATE.ready,
        createdAt: this.#state.nowNs(),
        labels: copyMap(config?.labels),
        annotations: copyMap(config?.annotations),
        runtimeHandler: request.runtimeHandler ?? "",
        ip,
        additionalIps: [],
        network: ns?.network ?? NAMESPACE_MODE.pod,
        pid: ns?.pid ?? NAMESPACE_MODE.container,
        ipc: ns?.ipc ?? NAMESPACE_MODE.pod,
      };
      this.#state.sandboxes.set(id, sandbox);
      // containerd 1.7 sends both, each with the sandbox READY.
      this.#state.emit(id, CONTAINER_EVENT_TYPE.created, id);
      this.#state.emit(id, CONTAINER_EVENT_TYPE.started, id);
      return { podSandboxId: id };
    });
  }

  /**
   * `StopPodSandbox`: stops its containers (a STOPPED event each), releases
   * its IP, then NOTREADY with its own STOPPED event, in containerd's order.
   */
  stopPodSandbox(request: MessageInit<PodSandboxIdRequest>): Promise<EmptyResponse> {
    return this.#faults.run("stopPodSandbox", () => {
      const s = this.#state.sandboxes.get(request.podSandboxId ?? "");
      if (s !== undefined) this.#state.stopSandbox(s);
      return {};
    });
  }

  /**
   * `RemovePodSandbox` (idempotent): stops it first if it is still READY, as
   * containerd does, then removes its containers (a DELETED event each) and
   * itself. Its own DELETED event carries no statuses: containerd sends it
   * once the sandbox is gone, so the event names only its ID.
   */
  removePodSandbox(request: MessageInit<PodSandboxIdRequest>): Promise<EmptyResponse> {
    return this.#faults.run("removePodSandbox", () => {
      const s = this.#state.sandboxes.get(request.podSandboxId ?? "");
      if (s === undefined) return {};
      this.#state.stopSandbox(s);
      for (const c of [...this.#state.containers.values()]) {
        if (c.sandboxId !== s.id) continue;
        this.#state.containers.delete(c.id);
        this.#state.emit(c.id, CONTAINER_EVENT_TYPE.deleted, s.id);
      }
      this.#state.sandboxes.delete(s.id);
      this.#state.emit(s.id, CONTAINER_EVENT_TYPE.deleted, s.id);
      return {};
    });
  }

  /** `PodSandboxStatus`. */
  podSandboxStatus(
    request: MessageInit<PodSandboxStatusRequest>,
  ): Promise<PodSandboxStatusResponse> {
    return this.#faults.run("podSandboxStatus", () => {
      return { status: sandboxStatusOf(this.#state.sandbox(request.podSandboxId ?? "")) };
    });
  }

  /** `ListPodSandbox` with its filter (ID, state, labels). */
  listPodSandbox(
    request: MessageInit<ListPodSandboxRequest> = {},
  ): Promise<ListPodSandboxResponse> {
    return this.#faults.run("listPodSandbox", () => {
      const f = request.filter;
      const items = [];
      for (const s of this.#state.sandboxes.values()) {
        if (f?.id && s.id !== f.id) continue;
        if (f?.state && s.state !== (f.state.state ?? 0)) continue;
        if (!matches(s.labels, f?.labelSelector)) continue;
        items.push(sandboxOf(s));
      }
      return { items };
    });
  }

  /** `CreateContainer`: CREATED, in a READY sandbox. */
  createContainer(request: MessageInit<CreateContainerRequest>): Promise<CreateContainerResponse> {
    return this.#faults.run("createContainer", () => {
      const s = this.#state.sandbox(request.podSandboxId ?? "", "CreateContainer");
      if (s.state !== POD_SANDBOX_STATE.ready) {
        throw new CriCallError(`sandbox "${s.id}" is not running`, {
          code: CRI_STATUS.failedPrecondition,
          method: "CreateContainer",
        });
      }
      const config = request.config;
      if (!config?.metadata?.name) {
        throw new CriCallError("container config must include metadata", {
          code: CRI_STATUS.invalidArgument,
          method: "CreateContainer",
        });
      }
      const image = config.image?.image ?? "";
      const preferred = this.preferredContainerId;
      this.preferredContainerId = undefined;
      const id = preferred !== undefined && !this.#state.containers.has(preferred)
        ? preferred
        : this.#state.newId("container");
      this.#state.containers.set(id, {
        id,
        sandboxId: s.id,
        name: config.metadata.name,
        attempt: config.metadata.attempt ?? 0,
        image,
        imageRef: `sha256:${fnvHex(`image/${image}`, 64)}`,
        state: CONTAINER_STATE.created,
        createdAt: this.#state.nowNs(),
        startedAt: 0,
        finishedAt: 0,
        exitCode: 0,
        reason: "",
        message: "",
        labels: copyMap(config.labels),
        annotations: copyMap(config.annotations),
        logPath: config.logPath ?? "",
        memoryLimitBytes: config.linux?.resources?.memoryLimitInBytes ?? 0,
        pid: 0,
      });
      this.#state.emit(id, CONTAINER_EVENT_TYPE.created, s.id);
      return { containerId: id };
    });
  }

  /** `StartContainer`: CREATED → RUNNING. */
  startContainer(request: MessageInit<ContainerIdRequest>): Promise<EmptyResponse> {
    return this.#faults.run("startContainer", () => {
      const c = this.#state.container(request.containerId ?? "", "StartContainer");
      if (c.state !== CONTAINER_STATE.created) {
        throw new CriCallError(`container "${c.id}" is not in created state`, {
          code: CRI_STATUS.failedPrecondition,
          method: "StartContainer",
        });
      }
      c.state = CONTAINER_STATE.running;
      c.startedAt = this.#state.nowNs();
      this.#processes.start(c);
      this.#state.emit(c.id, CONTAINER_EVENT_TYPE.started, c.sandboxId);
      return {};
    });
  }

  /** `StopContainer`: RUNNING → EXITED (137, as after the grace period). */
  stopContainer(request: MessageInit<StopContainerRequest>): Promise<EmptyResponse> {
    return this.#faults.run("stopContainer", () => {
      const c = this.#state.container(request.containerId ?? "", "StopContainer");
      this.#state.stop(c, KILLED_EXIT_CODE);
      return {};
    });
  }

  /** `RemoveContainer` (idempotent). */
  removeContainer(request: MessageInit<ContainerIdRequest>): Promise<EmptyResponse> {
    return this.#faults.run("removeContainer", () => {
      const c = this.#state.containers.get(request.containerId ?? "");
      if (c === undefined) return {};
      this.#state.stop(c, KILLED_EXIT_CODE);
      this.#state.containers.delete(c.id);
      this.#state.emit(c.id, CONTAINER_EVENT_TYPE.deleted, c.sandboxId);
      return {};
    });
  }

  /** `ListContainers` with its filter (ID, state, sandbox, labels). */
  listContainers(
    request: MessageInit<ListContainersRequest> = {},
  ): Promise<ListContainersResponse> {
    return this.#faults.run("listContainers", () => {
      const f = request.filter;
      const containers = [];
      for (const c of this.#state.containers.values()) {
        if (f?.id && c.id !== f.id) continue;
        if (f?.podSandboxId && c.sandboxId !== f.podSandboxId) continue;
        if (f?.state && c.state !== (f.state.state ?? 0)) continue;
        if (!matches(c.labels, f?.labelSelector)) continue;
        containers.push(containerOf(c));
      }
      return { containers };
    });
  }

  /** `ContainerStatus`. */
  containerStatus(request: MessageInit<ContainerStatusRequest>): Promise<ContainerStatusResponse> {
    return this.#faults.run("containerStatus", () => {
      const c = this.#state.container(request.containerId ?? "");
      if (request.verbose !== true) return { status: containerStatusOf(c) };
      const podUid = this.#state.sandboxes.get(c.sandboxId)?.uid ?? "";
      return { status: containerStatusOf(c), info: containerInfoOf(c, podUid) };
    });
  }

  /**
   * `GetContainerEvents`: the events from now on, until `signal` aborts.
   * Fails with UNIMPLEMENTED while {@linkcode SimCriRuntime.eventsImplemented}
   * is false.
   */
  async *getContainerEvents(
    _request: MessageInit<GetEventsRequest>,
    options: { signal: AbortSignal },
  ): AsyncGenerator<ContainerEventResponse> {
    this.#faults.enter("getContainerEvents");
    if (!this.eventsImplemented) {
      throw new CriCallError("method GetContainerEvents not implemented", {
        code: CRI_STATUS.unimplemented,
        method: "GetContainerEvents",
      });
    }
    yield* this.#state.events.subscribe(options.signal);
  }

  /** Number of open GetContainerEvents subscriptions. */
  get eventSubscribers(): number {
    return this.#state.events.subscribers;
  }
}
