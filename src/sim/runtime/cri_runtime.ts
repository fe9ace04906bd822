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
  ContainerEventFeed,
  containerOf,
  containerStatusOf,
  copyMap,
  fnvHex,
  found,
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
  CRI_METHODS,
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

export type { SimContainer, SimSandbox };

/** Options of {@linkcode SimCriRuntime}. */
export interface SimCriRuntimeOptions {
  /** Source of creation, start and finish times. @default {systemClock} */
  clock?: Clock;
  /** `runtimeName` of Version, the prefix of container IDs. @default {"pods-api-simulated"} */
  runtimeName?: string;
  /** First two octets of pod IPs (a /16: about 65000 pods). @default {"10.88"} */
  ipv4Prefix?: string;
  /** Also give each pod an IPv6 address under this prefix (e.g. `fd00::`). */
  ipv6Prefix?: string;
  /** Whether GetContainerEvents is implemented (false: UNIMPLEMENTED, as containerd 1.6). @default {true} */
  eventsImplemented?: boolean;
  /**
   * Whether each event carries its sandbox's status and the statuses of all
   * its containers, as containerd 1.7+ and CRI-O send them (false: the bare
   * event). @default {true}
   */
  eventStatuses?: boolean;
}

/** Every RuntimeService method name, for the call counters. */
const METHODS = Object.keys(CRI_METHODS) as CriMethodName[];

/** Exit code of a container stopped by StopContainer or with its sandbox (SIGKILL). */
const KILLED_EXIT_CODE = 137;

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
  /** Calls per method since creation or {@linkcode SimCriRuntime.resetCalls}. */
  readonly calls: Record<CriMethodName, number>;
  /** Whether GetContainerEvents is served (false: UNIMPLEMENTED). */
  eventsImplemented: boolean;
  /** Whether events carry the statuses of their sandbox and its containers. */
  eventStatuses: boolean;
  /** While true, every call fails with UNAVAILABLE (the runtime is down). */
  down = false;
  readonly #clock: Clock;
  readonly #runtimeName: string;
  readonly #ipv6Prefix: string | undefined;
  readonly #sandboxes = new Map<string, SimSandbox>();
  readonly #containers = new Map<string, SimContainer>();
  readonly #ips: IpPool;
  readonly #failures = new Map<CriMethodName, { code: number; times: number; message: string }>();
  readonly #stalls = new Set<CriMethodName>();
  readonly #events = new ContainerEventFeed();
  #lastNs = 0;
  #nextId = 1;
  /** Events of an open {@linkcode SimCriRuntime.holdEventStatuses}, in order. */
  #held: { event: ContainerEventResponse; sandboxId: string }[] | undefined;

  /** @param options Clock, runtime name, IP prefixes, events switch. */
  constructor(options: SimCriRuntimeOptions = {}) {
    this.#clock = options.clock ?? systemClock;
    this.#runtimeName = options.runtimeName ?? SIMULATED_RUNTIME_NAME;
    this.#ips = new IpPool({ prefix: options.ipv4Prefix ?? "10.88" });
    this.#ipv6Prefix = options.ipv6Prefix;
    this.eventsImplemented = options.eventsImplemented ?? true;
    this.eventStatuses = options.eventStatuses ?? true;
    this.calls = Object.fromEntries(METHODS.map((m) => [m, 0])) as Record<CriMethodName, number>;
  }

  // ---------------------------------------------------------------- controls

  /** Sets every call counter back to 0. */
  resetCalls(): void {
    for (const m of METHODS) this.calls[m] = 0;
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
    this.#failures.set(method, {
      code,
      times: options.times ?? 1,
      message: options.message ?? "injected failure",
    });
  }

  /**
   * Makes the next call of `method` never answer (a hung runtime); the
   * caller's deadline has to end it.
   *
   * @param method The method.
   */
  stallNext(method: CriMethodName): void {
    this.#stalls.add(method);
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
    const c = this.#container(containerId);
    if (c.state === CONTAINER_STATE.exited) return;
    c.state = CONTAINER_STATE.exited;
    if (c.startedAt === 0) c.startedAt = this.#nowNs();
    c.finishedAt = this.#nowNs();
    c.exitCode = options.exitCode;
    c.reason = options.reason ?? (options.exitCode === 0 ? "Completed" : "Error");
    c.message = options.message ?? "";
    this.#emit(c.id, CONTAINER_EVENT_TYPE.stopped, c.sandboxId);
  }

  /**
   * Kills a container for exceeding its memory limit: exit 137, reason OOMKilled.
   *
   * @param containerId The container.
   */
  oomKill(containerId: string): void {
    this.exitContainer(containerId, { exitCode: 137, reason: "OOMKilled" });
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
    const s = this.#sandbox(podSandboxId);
    if (s.state === state) return;
    s.state = state;
    const type = state === POD_SANDBOX_STATE.ready
      ? CONTAINER_EVENT_TYPE.started
      : CONTAINER_EVENT_TYPE.stopped;
    this.#emit(s.id, type, s.id);
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
    const s = this.#sandbox(podSandboxId);
    this.#releaseIp(s);
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
  async holdEventStatuses<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#held !== undefined) return await fn();
    const held: { event: ContainerEventResponse; sandboxId: string }[] = [];
    this.#held = held;
    try {
      return await fn();
    } finally {
      this.#held = undefined;
      for (const { event, sandboxId } of held) {
        this.#events.emit(
          this.#sandboxes.has(sandboxId) ? { ...event, ...this.#statusesOf(sandboxId) } : event,
        );
      }
    }
  }

  /**
   * Gives a test direct access to a stored sandbox (for hostile data).
   *
   * @param podSandboxId The sandbox.
   * @param edit Changes it in place.
   */
  tamperSandbox(podSandboxId: string, edit: (sandbox: SimSandbox) => void): void {
    edit(this.#sandbox(podSandboxId));
  }

  /**
   * Gives a test direct access to a stored container (for hostile data).
   *
   * @param containerId The container.
   * @param edit Changes it in place.
   */
  tamperContainer(containerId: string, edit: (container: SimContainer) => void): void {
    edit(this.#container(containerId));
  }

  /** Number of sandboxes held. */
  get sandboxCount(): number {
    return this.#sandboxes.size;
  }

  /** Number of containers held. */
  get containerCount(): number {
    return this.#containers.size;
  }

  // ---------------------------------------------------------------- helpers

  #nowNs(): number {
    const ns = Math.max(this.#clock.now() * 1e6, this.#lastNs + 1000);
    this.#lastNs = ns;
    return ns;
  }

  /**
   * An ID for the next `CreateContainer` (used once; ignored if taken). The
   * simulated node's bridge sets it so the runtime's container IDs match the
   * ones in the simulated pods' statuses, as a real kubelet's would.
   */
  preferredContainerId: string | undefined;

  #newId(kind: string): string {
    return fnvHex(`${kind}/${this.#nextId++}`, 64);
  }

  #enter(method: CriMethodName): void {
    this.calls[method]++;
    if (this.down) {
      throw new CriCallError("connection refused", { code: CRI_STATUS.unavailable, method });
    }
    const failure = this.#failures.get(method);
    if (failure !== undefined) {
      if (--failure.times <= 0) this.#failures.delete(method);
      throw new CriCallError(failure.message, { code: failure.code, method });
    }
  }

  #sandbox(id: string, method = "PodSandboxStatus"): SimSandbox {
    return found(this.#sandboxes.get(id), "sandbox", id, method);
  }

  #container(id: string, method = "ContainerStatus"): SimContainer {
    return found(this.#containers.get(id), "container", id, method);
  }

  #allocateIp(): string {
    try {
      return this.#ips.allocate();
    } catch {
      throw new CriCallError("no IP addresses left", {
        code: CRI_STATUS.internal,
        method: "RunPodSandbox",
      });
    }
  }

  #releaseIp(s: SimSandbox): void {
    this.#ips.release(s.ip);
    s.ip = "";
    s.additionalIps = [];
  }

  /**
   * An event of a container (or of the sandbox itself) in sandbox
   * `sandboxId`, stamped now, with the statuses of now (the sandbox's and
   * every container's it still holds; none at all once the sandbox is gone,
   * as for its own DELETED), as containerd builds them when the change
   * happens. Within {@linkcode SimCriRuntime.holdEventStatuses}, it is sent
   * when the hold ends, with the statuses of then while the sandbox is held.
   */
  #emit(containerId: string, type: number, sandboxId: string): void {
    if (this.#events.subscribers === 0) return;
    const event: ContainerEventResponse = {
      containerId,
      containerEventType: type,
      createdAt: this.#nowNs(),
      ...this.#statusesOf(sandboxId),
    };
    if (this.#held !== undefined) this.#held.push({ event, sandboxId });
    else this.#events.emit(event);
  }

  #statusesOf(sandboxId: string): Pick<
    ContainerEventResponse,
    "podSandboxStatus" | "containersStatuses"
  > {
    const sandbox = this.#sandboxes.get(sandboxId);
    if (!this.eventStatuses || sandbox === undefined) {
      return { podSandboxStatus: null, containersStatuses: [] };
    }
    const containersStatuses = [];
    for (const c of this.#containers.values()) {
      if (c.sandboxId === sandboxId) containersStatuses.push(containerStatusOf(c));
    }
    return { podSandboxStatus: sandboxStatusOf(sandbox), containersStatuses };
  }

  #stop(c: SimContainer, exitCode: number): void {
    if (c.state === CONTAINER_STATE.exited) return;
    const now = this.#nowNs();
    if (c.state === CONTAINER_STATE.created) c.startedAt = 0;
    c.state = CONTAINER_STATE.exited;
    c.finishedAt = now;
    c.exitCode = exitCode;
    c.reason = exitCode === 0 ? "Completed" : "Error";
    this.#emit(c.id, CONTAINER_EVENT_TYPE.stopped, c.sandboxId);
  }

  #stopSandbox(s: SimSandbox): void {
    for (const c of this.#containers.values()) {
      if (c.sandboxId === s.id) this.#stop(c, KILLED_EXIT_CODE);
    }
    this.#releaseIp(s);
    if (s.state !== POD_SANDBOX_STATE.notReady) {
      s.state = POD_SANDBOX_STATE.notReady;
      this.#emit(s.id, CONTAINER_EVENT_TYPE.stopped, s.id);
    }
  }

  // ---------------------------------------------------------------- RuntimeService

  /** `Version`. */
  version(_request: MessageInit<VersionRequest> = {}): Promise<VersionResponse> {
    return this.#run("version", () => ({
      version: "0.1.0",
      runtimeName: this.#runtimeName,
      runtimeVersion: "0.1.0",
      runtimeApiVersion: "v1",
    }));
  }

  /** `Status`: always ready. */
  status(_request: MessageInit<StatusRequest> = {}): Promise<StatusResponse> {
    return this.#run("status", () => ({
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
    return this.#run("runPodSandbox", () => {
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
      const id = this.#newId("sandbox");
      const ip = hostNetwork ? "" : this.#allocateIp();
      const sandbox: SimSandbox = {
        id,
        name: meta.name,
        uid: meta.uid,
        namespace: meta.namespace,
        attempt: meta.attempt ?? 0,
        state: POD_SANDBOX_STATE.ready,
        createdAt: this.#nowNs(),
        labels: copyMap(config?.labels),
        annotations: copyMap(config?.annotations),
        runtimeHandler: request.runtimeHandler ?? "",
        ip,
        additionalIps: ip !== "" && this.#ipv6Prefix !== undefined
          ? [`${this.#ipv6Prefix}${ip.split(".").slice(2).join(":")}`]
          : [],
        network: ns?.network ?? NAMESPACE_MODE.pod,
        pid: ns?.pid ?? NAMESPACE_MODE.container,
        ipc: ns?.ipc ?? NAMESPACE_MODE.pod,
      };
      this.#sandboxes.set(id, sandbox);
      // containerd 1.7 sends both, each with the sandbox READY.
      this.#emit(id, CONTAINER_EVENT_TYPE.created, id);
      this.#emit(id, CONTAINER_EVENT_TYPE.started, id);
      return { podSandboxId: id };
    });
  }

  /**
   * `StopPodSandbox`: stops its containers (a STOPPED event each), releases
   * its IP, then NOTREADY with its own STOPPED event, in containerd's order.
   */
  stopPodSandbox(request: MessageInit<PodSandboxIdRequest>): Promise<EmptyResponse> {
    return this.#run("stopPodSandbox", () => {
      const s = this.#sandboxes.get(request.podSandboxId ?? "");
      if (s !== undefined) this.#stopSandbox(s);
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
    return this.#run("removePodSandbox", () => {
      const s = this.#sandboxes.get(request.podSandboxId ?? "");
      if (s === undefined) return {};
      this.#stopSandbox(s);
      for (const c of [...this.#containers.values()]) {
        if (c.sandboxId !== s.id) continue;
        this.#containers.delete(c.id);
        this.#emit(c.id, CONTAINER_EVENT_TYPE.deleted, s.id);
      }
      this.#sandboxes.delete(s.id);
      this.#emit(s.id, CONTAINER_EVENT_TYPE.deleted, s.id);
      return {};
    });
  }

  /** `PodSandboxStatus`. */
  podSandboxStatus(
    request: MessageInit<PodSandboxStatusRequest>,
  ): Promise<PodSandboxStatusResponse> {
    return this.#run("podSandboxStatus", () => {
      return { status: sandboxStatusOf(this.#sandbox(request.podSandboxId ?? "")) };
    });
  }

  /** `ListPodSandbox` with its filter (ID, state, labels). */
  listPodSandbox(
    request: MessageInit<ListPodSandboxRequest> = {},
  ): Promise<ListPodSandboxResponse> {
    return this.#run("listPodSandbox", () => {
      const f = request.filter;
      const items = [];
      for (const s of this.#sandboxes.values()) {
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
    return this.#run("createContainer", () => {
      const s = this.#sandbox(request.podSandboxId ?? "", "CreateContainer");
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
      const id = preferred !== undefined && !this.#containers.has(preferred)
        ? preferred
        : this.#newId("container");
      this.#containers.set(id, {
        id,
        sandboxId: s.id,
        name: config.metadata.name,
        attempt: config.metadata.attempt ?? 0,
        image,
        imageRef: `sha256:${fnvHex(`image/${image}`, 64)}`,
        state: CONTAINER_STATE.created,
        createdAt: this.#nowNs(),
        startedAt: 0,
        finishedAt: 0,
        exitCode: 0,
        reason: "",
        message: "",
        labels: copyMap(config.labels),
        annotations: copyMap(config.annotations),
        logPath: config.logPath ?? "",
        memoryLimitBytes: config.linux?.resources?.memoryLimitInBytes ?? 0,
      });
      this.#emit(id, CONTAINER_EVENT_TYPE.created, s.id);
      return { containerId: id };
    });
  }

  /** `StartContainer`: CREATED → RUNNING. */
  startContainer(request: MessageInit<ContainerIdRequest>): Promise<EmptyResponse> {
    return this.#run("startContainer", () => {
      const c = this.#container(request.containerId ?? "", "StartContainer");
      if (c.state !== CONTAINER_STATE.created) {
        throw new CriCallError(`container "${c.id}" is not in created state`, {
          code: CRI_STATUS.failedPrecondition,
          method: "StartContainer",
        });
      }
      c.state = CONTAINER_STATE.running;
      c.startedAt = this.#nowNs();
      this.#emit(c.id, CONTAINER_EVENT_TYPE.started, c.sandboxId);
      return {};
    });
  }

  /** `StopContainer`: RUNNING → EXITED (137, as after the grace period). */
  stopContainer(request: MessageInit<StopContainerRequest>): Promise<EmptyResponse> {
    return this.#run("stopContainer", () => {
      const c = this.#container(request.containerId ?? "", "StopContainer");
      this.#stop(c, KILLED_EXIT_CODE);
      return {};
    });
  }

  /** `RemoveContainer` (idempotent). */
  removeContainer(request: MessageInit<ContainerIdRequest>): Promise<EmptyResponse> {
    return this.#run("removeContainer", () => {
      const c = this.#containers.get(request.containerId ?? "");
      if (c === undefined) return {};
      this.#stop(c, KILLED_EXIT_CODE);
      this.#containers.delete(c.id);
      this.#emit(c.id, CONTAINER_EVENT_TYPE.deleted, c.sandboxId);
      return {};
    });
  }

  /** `ListContainers` with its filter (ID, state, sandbox, labels). */
  listContainers(
    request: MessageInit<ListContainersRequest> = {},
  ): Promise<ListContainersResponse> {
    return this.#run("listContainers", () => {
      const f = request.filter;
      const containers = [];
      for (const c of this.#containers.values()) {
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
    return this.#run("containerStatus", () => {
      return { status: containerStatusOf(this.#container(request.containerId ?? "")) };
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
    this.#enter("getContainerEvents");
    if (!this.eventsImplemented) {
      throw new CriCallError("method GetContainerEvents not implemented", {
        code: CRI_STATUS.unimplemented,
        method: "GetContainerEvents",
      });
    }
    yield* this.#events.subscribe(options.signal);
  }

  /** Number of open GetContainerEvents subscriptions. */
  get eventSubscribers(): number {
    return this.#events.subscribers;
  }

  #run<T>(method: CriMethodName, fn: () => T): Promise<T> {
    try {
      this.#enter(method);
      if (this.#stalls.delete(method)) return new Promise<T>(() => {});
      return Promise.resolve(fn());
    } catch (err) {
      return Promise.reject(err);
    }
  }
}
