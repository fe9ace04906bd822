/**
 * Runs and drives the fake kubelet Pods API server
 * (`fake_kubelet_podsapi_server.py`: Python grpcio, its messages from the
 * descriptors protoc compiles from our .proto files, so none of our encoders
 * or our gRPC server is in the path) in its own process, as a kubelet is:
 * killing it leaves its socket file behind, and a new one on the same path
 * removes that file and binds its own, as a restarted kubelet does.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { PodObject } from "../../src/model/pod.ts";
import { PEERS, requirePeer } from "./peers.ts";

/** What the fake kubelet needs: protoc, Python grpcio and protobuf. */
export const FAKE_KUBELET_PEER = requirePeer(PEERS.protoc, PEERS.grpcio, PEERS.pythonProtobuf);

/**
 * `Deno.test` for a case that runs the fake kubelet: ignored, saying why,
 * when protoc or Python's grpcio or protobuf is missing (failed under
 * `PODS_API_REQUIRE_PEERS=1`), see {@linkcode requirePeer}.
 *
 * @param name The test's name.
 * @param fn The test.
 */
export function fakeKubeletTest(name: string, fn: (t: Deno.TestContext) => Promise<void>): void {
  Deno.test({ name: FAKE_KUBELET_PEER.name(name), ignore: FAKE_KUBELET_PEER.ignore, fn });
}

const SCRIPT = new URL("./fake_kubelet_podsapi_server.py", import.meta.url).pathname;
const PROTO_DIR = new URL("../../proto/", import.meta.url).pathname;
const PROTOS = ["pods_api.proto", "k8s.io/api/core/v1/generated.proto"];

/** The fake's answer to a command. */
export interface FakeKubeletStats {
  /** Watches open now. */
  readonly watchers: number;
  /** Watches ever started (past the ready check). */
  readonly watches: number;
}

/** Options of {@linkcode startFakeKubeletPodsApi}. */
export interface FakeKubeletPodsApiOptions {
  /** Start answering FAILED_PRECONDITION. */
  initializing?: boolean;
  /** Start serving the status the kubelet gives before it knows one. */
  unknownStatus?: boolean;
}

/** A running fake kubelet process. */
export interface FakeKubeletPodsApi extends AsyncDisposable {
  readonly path: string;
  /** The pods now; watchers get the difference. */
  set(pods: readonly PodObject[]): Promise<FakeKubeletStats>;
  ready(value: boolean): Promise<FakeKubeletStats>;
  unknownStatus(value: boolean): Promise<FakeKubeletStats>;
  /** Ends every watch with RESOURCE_EXHAUSTED. */
  drop(): Promise<FakeKubeletStats>;
  /** Ends every watch with OK. */
  closeWatches(): Promise<FakeKubeletStats>;
  /** Sends one event as given (`type` is the wire number). */
  raw(type: number, pod?: PodObject): Promise<FakeKubeletStats>;
  stats(): Promise<FakeKubeletStats>;
  /** Waits until `check` holds for the stats. */
  until(check: (stats: FakeKubeletStats) => boolean, what: string): Promise<FakeKubeletStats>;
  /** SIGKILL: the socket file stays, nobody listens (a crashed kubelet). */
  kill(): Promise<void>;
}

/**
 * Starts a fake kubelet on `path` (replacing whatever file is there).
 *
 * @param path The socket path.
 * @param options Initial state.
 * @returns The fake, listening.
 */
export async function startFakeKubeletPodsApi(
  path: string,
  options: FakeKubeletPodsApiOptions = {},
): Promise<FakeKubeletPodsApi> {
  FAKE_KUBELET_PEER.check();
  const protos = await Deno.makeTempDir({ prefix: "pods-api-fake-kubelet-" });
  const descriptors = `${protos}/pods_api.pb`;
  const protoc = await new Deno.Command("/usr/bin/protoc", {
    args: ["-I", PROTO_DIR, "--include_imports", `--descriptor_set_out=${descriptors}`, ...PROTOS],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(protoc.success, new TextDecoder().decode(protoc.stderr));
  const args = ["-B", SCRIPT, descriptors, path];
  if (options.initializing) args.push("--initializing");
  if (options.unknownStatus) args.push("--unknown-status");
  const child = new Deno.Command("/usr/bin/python3", {
    args,
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const writer = child.stdin.getWriter();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  const readLine = async (): Promise<string> => {
    for (;;) {
      const newline = buffered.indexOf("\n");
      if (newline >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        return line;
      }
      const { value, done } = await lines.read();
      if (done) throw new Error("The fake kubelet exited");
      buffered += value;
    }
  };
  await readLine(); // listening
  let queue = Promise.resolve();
  const send = (command: unknown): Promise<FakeKubeletStats> => {
    const result = queue.then(async () => {
      await writer.write(new TextEncoder().encode(`${JSON.stringify(command)}\n`));
      const answer = JSON.parse(await readLine());
      if (!answer.ok) {
        throw new Error(`The fake kubelet refused ${JSON.stringify(command)}: ${answer.error}`);
      }
      return { watchers: answer.watchers, watches: answer.watches } as FakeKubeletStats;
    });
    queue = result.then(() => {}, () => {});
    return result;
  };
  let dead = false;
  const kill = async () => {
    if (dead) return;
    dead = true;
    try {
      child.kill("SIGKILL");
    } catch {
      // Exited already.
    }
    await child.status;
    await writer.close().catch(() => {});
    await lines.cancel().catch(() => {});
    await Deno.remove(protos, { recursive: true }).catch(() => {});
  };
  return {
    path,
    set: (pods) => send({ op: "set", pods }),
    ready: (value) => send({ op: "ready", value }),
    unknownStatus: (value) => send({ op: "unknownStatus", value }),
    drop: () => send({ op: "drop" }),
    closeWatches: () => send({ op: "close" }),
    raw: (type, pod) => send({ op: "raw", type, ...(pod ? { pod } : {}) }),
    stats: () => send({ op: "stats" }),
    async until(check, what) {
      const deadline = Date.now() + 15_000;
      for (;;) {
        const stats = await send({ op: "stats" });
        if (check(stats)) return stats;
        if (Date.now() > deadline) {
          throw new Error(
            `Timed out waiting for the fake kubelet: ${what} (${JSON.stringify(stats)})`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    },
    kill,
    async [Symbol.asyncDispose]() {
      await kill();
      await Deno.remove(path).catch(() => {});
    },
  };
}
