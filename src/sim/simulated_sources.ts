/**
 * `pods-api serve --simulate`: the sources of a simulated node, wired the way
 * a real node's are. Only `main.ts` (and tests and benchmarks) call it, so
 * nothing below the simulator depends on it.
 *
 * @module
 */

import { dirname, join } from "node:path";
import type { ServeConfig } from "../config.ts";
import { CriClient, CriPodSource } from "../sources/cri/mod.ts";
import {
  configuredOptionalSources,
  type CreatedSources,
  type CreateSourcesDeps,
} from "../sources/create.ts";
import { withFirstSyncDelay } from "../sources/first_sync_delay.ts";
import { closeOptionalSources } from "../sources/optional.ts";
import { SimulatedNode, SimulatedPodSource } from "./node/mod.ts";
import { SimProcFs, startSimulatedRuntime } from "./runtime/mod.ts";

/**
 * The simulated node served the way a real node is: its pods as a spec
 * source (as the kubelet's `/pods` would give them) and a simulated CRI
 * runtime on a socket beside the API socket, read by the same CRI client
 * and relist code as production. The configured optional sources (static
 * manifests, a kubelet) come too.
 *
 * @example Usage
 * ```ts ignore
 * import { simulatedSources } from "./simulated_sources.ts";
 * await using created = await simulatedSources(config, { log, clock, metrics });
 * ```
 *
 * @param config The effective configuration (`--simulate-*`).
 * @param deps Log, clock and metrics.
 * @returns The simulated runtime's CRI source, the node's spec source, the optional ones.
 */
export async function simulatedSources(
  config: ServeConfig,
  deps: CreateSourcesDeps,
): Promise<CreatedSources> {
  const optional = configuredOptionalSources(config, deps);
  const nodeIPv4 = config.nodeIPs.find((ip) => /^\d+\.\d+\.\d+\.\d+$/.test(ip));
  const node = new SimulatedNode({
    clock: deps.clock,
    nodeName: config.nodeName,
    pods: config.simulatePods,
    churnPerSecond: config.simulateChurn,
    seed: config.simulateSeed,
    // --node-ip as on a real node (the simulator's pod network is IPv4 only).
    ...(nodeIPv4 === undefined ? {} : { hostIP: nodeIPv4 }),
  });
  const stop = new AbortController();
  // The simulated runtime's socket lives beside the API socket (the one
  // directory the daemon may write to); make it as the server would.
  await Deno.mkdir(dirname(config.socket), { recursive: true, mode: 0o750 });
  const runtime = await startSimulatedRuntime({
    node,
    socketPath: join(dirname(config.socket), "simulated-cri.sock"),
    clock: deps.clock,
    syncPeriodMs: config.relistPeriodMs,
    signal: stop.signal,
    log: deps.log.child("simulated-runtime"),
  });
  const client = new CriClient(runtime.endpoint);
  const cri = new CriPodSource({
    runtime: client,
    nodeName: node.nodeName,
    hostIPs: nodeIPv4 === undefined ? [node.hostIP] : [...config.nodeIPs],
    // No runtimeName: the source asks the runtime's Version, as on a real
    // node, and the simulated runtime answers with its own name.
    metrics: deps.metrics,
    log: deps.log.child("cri"),
  });
  const spec = withFirstSyncDelay(new SimulatedPodSource({ node, clock: deps.clock }), {
    delayMs: config.simulateSyncDelayMs,
    clock: deps.clock,
  });
  return {
    sources: [cri, spec, ...optional],
    // The spec source's kind is "fake"; the log should say what it is.
    names: ["cri (simulated runtime)", "simulated node", ...optional.map((s) => s.kind)],
    runtime:
      `simulated node (${config.simulatePods} pods, ${config.simulateChurn} changes/s) behind a simulated CRI runtime at ${runtime.endpoint}`,
    // Its containers' processes: `pods-api whois` answers on the simulated node too.
    procFs: new SimProcFs(runtime.runtime),
    async [Symbol.asyncDispose]() {
      closeOptionalSources(optional);
      client.close();
      stop.abort();
      await runtime.close();
    },
  };
}
