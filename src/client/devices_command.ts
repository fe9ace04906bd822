/**
 * `pods-api devices`: what the node's pods hold (devices, exclusive CPUs,
 * memory, DRA devices, from the kubelet's podresources API as the daemon
 * joined it), which pod and container holds one device, and the node's
 * devices with which are free. Tables as crictl and nvidia-smi users read
 * them; `-o json|yaml` like every client command.
 *
 * @module
 */

import { GrpcError, STATUS } from "../grpc/status.ts";
import { outputFlag, type ParsedFlags, stringFlag, switchFlag, UsageError } from "./cli_flags.ts";
import { renderDocument } from "./pod_output.ts";
import { allocationRows, allocationTable, deviceSummary, nodeDeviceTable } from "./device_table.ts";
import { alignColumns, type PodColumn } from "./pod_table.ts";
import { type NodeDevicesInfo, PodQueryClient } from "./pod_query_client.ts";
import type { PodsClient } from "./pods_client.ts";

/** What the command writes to. */
export interface DevicesIo {
  out(text: string): void;
  err(text: string): void;
  signal: AbortSignal;
}

const OUTPUTS = ["table", "wide", "json", "yaml"] as const;
type Output = typeof OUTPUTS[number];

function print(io: DevicesIo, output: "json" | "yaml", doc: unknown): void {
  io.out(renderDocument(doc, output));
}

function table(io: DevicesIo, rows: string[][], noHeaders: boolean): void {
  const body = noHeaders ? rows.slice(1) : rows;
  if (body.length > 0) io.out(alignColumns(body).join("\n"));
}

function unimplemented(err: unknown): never {
  if (err instanceof GrpcError && err.code === STATUS.UNIMPLEMENTED) {
    throw new GrpcError(
      STATUS.UNIMPLEMENTED,
      "devices needs a pods-api daemon that serves podsapi.v1.PodQuery with devices; this socket does not",
    );
  }
  throw err;
}

/**
 * Runs `pods-api devices`.
 *
 * @param flags The parsed flags.
 * @param io Output and interrupt.
 * @param client A connection to the daemon.
 * @returns The exit code (0).
 * @throws {UsageError} For flags that do not go together.
 * @throws {GrpcError} What the daemon answered.
 */
export async function devicesCommand(
  flags: ParsedFlags,
  io: DevicesIo,
  client: PodsClient,
): Promise<number> {
  const output = outputFlag(flags, OUTPUTS);
  const namespace = stringFlag(flags, "namespace");
  if (switchFlag(flags, "all-namespaces") && namespace !== undefined) {
    throw new UsageError("flags -n and -A cannot be used together");
  }
  const resource = stringFlag(flags, "resource") ?? "";
  const node = switchFlag(flags, "node");
  const noHeaders = switchFlag(flags, "no-headers");
  if (flags.positionals.length > 1) {
    throw new UsageError(`name one device; got ${flags.positionals.length}`);
  }
  const [deviceId] = flags.positionals;
  if (deviceId !== undefined && node) {
    throw new UsageError("a DEVICE and --node cannot be used together");
  }
  const query = new PodQueryClient(client, { fields: ["metadata.name"] });
  const signal = io.signal;
  try {
    if (deviceId !== undefined) {
      return await lookUp(query, deviceId, { io, output, noHeaders });
    }
    if (node) {
      const devices = await query.listDevices(resource, { signal });
      warnUnavailable(io, devices);
      const held = devices.freeCpuIds.length < devices.cpuIds.length
        ? (await query.list({ resourceName: "cpu" }, { signal, includeResources: true })).resources
        : [];
      if (output === "json" || output === "yaml") {
        const { resumeToken: _, ...rest } = devices;
        print(io, output, { kind: "NodeDevices", ...rest });
        return 0;
      }
      table(io, nodeDeviceTable(devices, held, { wide: output === "wide" }), noHeaders);
      return 0;
    }
    const selection = {
      namespace: namespace ?? "",
      labelSelector: stringFlag(flags, "selector") ?? "",
      resourceName: resource,
    };
    const { resources } = await query.list(selection, { signal, includeResources: true });
    if (output === "json" || output === "yaml") {
      print(io, output, { kind: "PodResourcesList", items: resources });
      return 0;
    }
    const rows = allocationRows(resources, resource);
    if (rows.length === 0) {
      io.err(
        namespace === undefined ? "No devices held" : `No devices held in ${namespace} namespace.`,
      );
      const devices = await query.listDevices("", { signal });
      warnUnavailable(io, devices);
      return 0;
    }
    table(
      io,
      allocationTable(rows, { namespace: namespace === undefined, wide: output === "wide" }),
      noHeaders,
    );
    return 0;
  } catch (err) {
    return unimplemented(err);
  }
}

function warnUnavailable(io: DevicesIo, devices: NodeDevicesInfo): void {
  if (!devices.available) {
    io.err(`pods-api devices: the kubelet's podresources API is not available: ${devices.message}`);
  }
}

async function lookUp(
  query: PodQueryClient,
  deviceId: string,
  display: { io: DevicesIo; output: Output; noHeaders: boolean },
): Promise<number> {
  const { io, output, noHeaders } = display;
  let found;
  try {
    found = await query.get({ kind: "deviceId", id: deviceId }, {
      signal: io.signal,
      includeResources: true,
    });
  } catch (err) {
    if (!(err instanceof GrpcError && err.code === STATUS.NOT_FOUND)) throw err;
    // No pod holds it: say whether the node has it at all.
    const devices = await query.listDevices("", { signal: io.signal });
    const free = devices.devices.find((d) => d.deviceId === deviceId);
    if (free === undefined) {
      warnUnavailable(io, devices);
      throw new GrpcError(
        STATUS.NOT_FOUND,
        `no pod holds device "${deviceId}", and the node lists no such device`,
      );
    }
    if (output === "json" || output === "yaml") {
      print(io, output, { kind: "NodeDevice", ...free });
      return 0;
    }
    const numa = free.numaNodes.length === 0 ? "" : `, NUMA ${free.numaNodes.join(",")}`;
    io.out(`${deviceId} (${free.resourceName}${numa}) is free`);
    return 0;
  }
  const pod = found.pod.metadata;
  if (output === "json" || output === "yaml") {
    print(io, output, {
      kind: "DeviceHolder",
      device: deviceId,
      pod: { uid: pod.uid, namespace: pod.namespace, name: pod.name },
      containers: found.deviceContainers,
      resources: found.resources,
    });
    return 0;
  }
  const rows = allocationRows(found.resources === undefined ? [] : [found.resources])
    .filter((r) =>
      found.deviceContainers.includes(r.container) && matchesDevice(r.device, deviceId, r.cdi)
    );
  table(io, allocationTable(rows, { namespace: true, wide: output === "wide" }), noHeaders);
  if (found.deleted) io.err(`pods-api devices: pod ${pod.namespace}/${pod.name} was deleted`);
  return 0;
}

/** Whether a row is the device asked for (by its ID, its DRA device name or a CDI name). */
function matchesDevice(device: string, id: string, cdi: string): boolean {
  return device === id || device.endsWith(`/${id}`) || cdi.split(",").includes(id);
}

/**
 * `list -o wide`'s DEVICES column (what each pod holds, by resource), when
 * the daemon serves it and some pod holds something; else no column.
 *
 * @param client A connection to the daemon.
 * @param signal Cancels the call.
 * @returns The column, or `undefined`.
 * @throws {GrpcError} What the daemon answered, but UNIMPLEMENTED (a kubelet's socket: no column).
 */
export async function devicesColumn(
  client: PodsClient,
  signal: AbortSignal,
): Promise<PodColumn | undefined> {
  let held;
  try {
    held = await new PodQueryClient(client, { fields: ["metadata.name"] }).list({}, {
      signal,
      includeResources: true,
    });
  } catch (err) {
    if (err instanceof GrpcError && err.code === STATUS.UNIMPLEMENTED) return undefined;
    throw err;
  }
  if (held.resources.length === 0) return undefined;
  const byUid = new Map(held.resources.map((r) => [r.uid, r]));
  return {
    header: "DEVICES",
    needs: [],
    cell: (pod) => deviceSummary(byUid.get(pod.metadata.uid)),
  };
}
