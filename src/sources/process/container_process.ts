/**
 * A container's init process as the runtime reports it: containerd's (and
 * CRI-O's) verbose `ContainerStatus` carries `info["info"]`, a JSON object
 * with the host `pid` and the OCI runtime spec (`runtimeSpec.linux.cgroupsPath`).
 * The process index ({@linkcode ./process_index.ts}) goes from these to
 * cgroup IDs, cgroup paths and mount namespaces.
 *
 * @module
 */

/** What the runtime says of a running container's process. */
export interface ContainerProcess {
  /** The init process' PID in the host PID namespace. */
  readonly pid: number;
  /**
   * The runtime spec's `linux.cgroupsPath`: a path (cgroupfs driver) or
   * `slice:prefix:name` (systemd driver); "" when the spec has none.
   */
  readonly cgroupsPath: string;
}

/** A running container of a pod and its process. */
export interface RunningContainerProcess extends ContainerProcess {
  /** The bare container ID (no `containerd://`). */
  readonly containerId: string;
  readonly podUid: string;
}

/** A source that knows its running containers' processes (the CRI source). */
export interface ContainerProcessSource {
  /**
   * @returns The running containers with a known process: the same array
   * while nothing changed, a new one after any change.
   */
  containerProcesses(): readonly RunningContainerProcess[];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Reads the process of a container from a verbose `ContainerStatus`'s `info`.
 *
 * @example Usage
 * ```ts
 * import { parseContainerInfo } from "./container_process.ts";
 * parseContainerInfo({ info: '{"pid":42,"runtimeSpec":{"linux":{"cgroupsPath":"/k/c"}}}' });
 * // { pid: 42, cgroupsPath: "/k/c" }
 * ```
 *
 * @param info The response's `info` map (absent without `verbose`).
 * @returns The process, or `undefined` when `info` names no live PID (a
 *   container not running has `pid` 0) or is not JSON.
 */
export function parseContainerInfo(
  info: Readonly<Record<string, string>> | undefined,
): ContainerProcess | undefined {
  const text = info?.["info"];
  if (text === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isRecord(parsed)) return undefined;
  const pid = parsed["pid"];
  if (typeof pid !== "number" || !Number.isSafeInteger(pid) || pid <= 0) return undefined;
  const spec = parsed["runtimeSpec"];
  const linux = isRecord(spec) ? spec["linux"] : undefined;
  const path = isRecord(linux) ? linux["cgroupsPath"] : undefined;
  return { pid, cgroupsPath: typeof path === "string" ? path : "" };
}

/**
 * The cgroup directory a runtime spec's `cgroupsPath` names, relative to
 * the cgroup root as `/proc/PID/cgroup` shows it. The systemd driver's
 * `slice:prefix:name` becomes `/a.slice/a-b.slice/prefix-name.scope`, as
 * runc expands it.
 *
 * @param cgroupsPath The spec's `linux.cgroupsPath`.
 * @returns The path, or `undefined` for "".
 */
export function cgroupDirOf(cgroupsPath: string): string | undefined {
  if (cgroupsPath === "") return undefined;
  const parts = cgroupsPath.split(":");
  if (parts.length !== 3 || cgroupsPath.startsWith("/")) {
    return cgroupsPath.startsWith("/") ? cgroupsPath : `/${cgroupsPath}`;
  }
  const [slice, prefix, name] = parts as [string, string, string];
  let dir = "";
  if (slice !== "" && slice !== "-.slice") {
    // kubepods-besteffort-pod1.slice -> /kubepods.slice/kubepods-besteffort.slice/...
    const stem = slice.endsWith(".slice") ? slice.slice(0, -".slice".length) : slice;
    const words = stem.split("-");
    for (let i = 1; i <= words.length; i++) dir += `/${words.slice(0, i).join("-")}.slice`;
  }
  const unit = name.endsWith(".slice") ? name : `${prefix === "" ? "" : `${prefix}-`}${name}.scope`;
  return `${dir}/${unit}`;
}
