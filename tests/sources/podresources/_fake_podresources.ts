/**
 * Starts the fake kubelet podresources server (`_fake_podresources_server.py`,
 * Python grpcio in its own process, messages from protoc's descriptors of
 * our .proto) and drives it: what `List` and `GetAllocatableResources`
 * answer, refusals with RESOURCE_EXHAUSTED, call counts.
 *
 * @module
 */

import assert from "node:assert/strict";
import type {
  AllocatableResources,
  ContainerMemory,
  PodResources,
} from "../../../src/model/pod_resources.ts";
import { PEERS, requirePeer } from "../../_support/peers.ts";

/** What the fake server needs: protoc, Python grpcio and protobuf. */
export const FAKE_PODRESOURCES_PEER = requirePeer(
  PEERS.protoc,
  PEERS.grpcio,
  PEERS.pythonProtobuf,
);

const PROTO = "k8s.io/kubelet/podresources/v1/api.proto";

/** A running fake podresources server. */
export interface FakePodResources extends AsyncDisposable {
  /** `unix://` endpoint of its socket. */
  readonly endpoint: string;
  /** What `List` answers from now on. */
  setList(pods: readonly PodResources[]): Promise<void>;
  /** What `GetAllocatableResources` answers from now on. */
  setAllocatable(allocatable: AllocatableResources): Promise<void>;
  /** Refuses the next `count` calls with RESOURCE_EXHAUSTED. */
  refuse(count: number): Promise<void>;
  /** Calls per method so far. */
  calls(): Promise<Record<"List" | "GetAllocatableResources" | "Get", number>>;
}

function topology(numa: readonly number[]) {
  return numa.length === 0 ? {} : { topology: { nodes: numa.map((id) => ({ ID: id })) } };
}

function memoryJson(m: ContainerMemory) {
  return { memoryType: m.memoryType, size: m.size, ...topology(m.numaNodes) };
}

/** The proto3 JSON of a `PodResources`, as protobuf's json_format reads it. */
function podJson(p: PodResources) {
  return {
    name: p.name,
    namespace: p.namespace,
    cpuIds: p.cpuIds,
    memory: p.memory.map(memoryJson),
    containers: p.containers.map((c) => ({
      name: c.name,
      cpuIds: c.cpuIds,
      memory: c.memory.map(memoryJson),
      devices: c.devices.map((d) => ({
        resourceName: d.resourceName,
        deviceIds: d.deviceIds,
        ...topology(d.numaNodes),
      })),
      dynamicResources: c.dynamicResources.map((r) => ({
        claimName: r.claimName,
        claimNamespace: r.claimNamespace,
        claimResources: r.devices.map((d) => ({
          cdiDevices: d.cdiDevices.map((name) => ({ name })),
          driverName: d.driverName,
          poolName: d.poolName,
          deviceName: d.deviceName,
          ...(d.shareId === "" ? {} : { shareId: d.shareId }),
        })),
      })),
    })),
  };
}

/**
 * Compiles the proto with protoc and starts the server on `dir/podresources.sock`.
 *
 * @param dir A temporary directory.
 * @returns The server.
 */
export async function startFakePodResources(dir: string): Promise<FakePodResources> {
  const descriptors = `${dir}/podresources.pb`;
  const protoc = await new Deno.Command("/usr/bin/protoc", {
    args: ["-I", "proto", `--descriptor_set_out=${descriptors}`, PROTO],
    cwd: new URL("../../..", import.meta.url),
  }).output();
  assert.ok(protoc.success, new TextDecoder().decode(protoc.stderr));
  const socket = `${dir}/podresources.sock`;
  const child = new Deno.Command("/usr/bin/python3", {
    args: [
      new URL("./_fake_podresources_server.py", import.meta.url).pathname,
      descriptors,
      socket,
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const stdin = child.stdin.getWriter();
  const stderr = new Response(child.stderr).text();
  let buffered = "";
  // deno-lint-ignore no-explicit-any
  const answer = async (): Promise<any> => {
    while (!buffered.includes("\n")) {
      const { value, done } = await lines.read();
      if (done) throw new Error(`the fake podresources server ended: ${await stderr}`);
      buffered += value;
    }
    const at = buffered.indexOf("\n");
    const line = buffered.slice(0, at);
    buffered = buffered.slice(at + 1);
    return JSON.parse(line);
  };
  // deno-lint-ignore no-explicit-any
  const send = async (command: Record<string, unknown>): Promise<any> => {
    await stdin.write(new TextEncoder().encode(JSON.stringify(command) + "\n"));
    return await answer();
  };
  assert.deepEqual(await answer(), { ready: true });
  return {
    endpoint: `unix://${socket}`,
    async setList(pods) {
      await send({ list: { podResources: pods.map(podJson) } });
    },
    async setAllocatable(a) {
      await send({
        allocatable: {
          devices: a.devices.map((d) => ({
            resourceName: d.resourceName,
            deviceIds: d.deviceIds,
            ...topology(d.numaNodes),
          })),
          cpuIds: a.cpuIds,
          memory: a.memory.map(memoryJson),
        },
      });
    },
    async refuse(count) {
      await send({ refuse: count });
    },
    async calls() {
      return (await send({ calls: true })).calls;
    },
    async [Symbol.asyncDispose]() {
      await stdin.close().catch(() => {});
      const status = await child.status;
      await lines.cancel().catch(() => {});
      const err = await stderr;
      assert.ok(status.success, err);
    },
  };
}
