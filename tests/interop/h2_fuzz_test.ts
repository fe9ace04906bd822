// The raw HTTP/2 fuzzer (tests/interop/h2_fuzz.py, python3-h2/hpack) against
// the daemon child: valid gRPC requests mixed with mutated and hostile frames
// over many connections, each closed in a random order. The daemon must stay
// up, answer a final ListPods, and have its fds and RSS back where they were.
import assert from "node:assert/strict";
import {
  assertDaemonHealthy,
  baseline,
  lastJson,
  log,
  LONG,
  runPeer,
  startPeerDaemon,
} from "./_peer_harness.ts";
import { PEERS, requirePeer } from "../_support/peers.ts";

interface FuzzSummary {
  frames: number;
  bytes: number;
  connections: number;
  closes: Record<string, number>;
  "goaway_codes": Record<string, number>;
  "connect_errors": Record<string, number>;
  "final_grpc_status": string | null;
  seconds: number;
  seed: number;
}

const peer = requirePeer(PEERS.h2);
const FUZZER = new URL("./h2_fuzz.py", import.meta.url).pathname;
const FRAMES = Number(Deno.env.get("PODS_API_FUZZ_FRAMES") ?? (LONG ? 1_000_000 : 400_000));
const SEED = Deno.env.get("PODS_API_FUZZ_SEED") ?? "20261201";

Deno.test({
  name: peer.name("a raw HTTP/2 fuzzer leaves the daemon up and answering"),
  ignore: peer.ignore,
  async fn() {
    peer.check();
    await using daemon = await startPeerDaemon();
    const fuzz = (frames: number, seed: string) =>
      runPeer("/usr/bin/python3", [
        FUZZER,
        daemon.socket,
        "--frames",
        String(frames),
        "--seed",
        seed,
      ], {
        timeoutMs: 60 * 60_000,
      });
    // Warm-up with another seed, so the baseline includes what the first hostile connections allocate.
    const warm = await daemon.child.explain(() => fuzz(2_000, "1"));
    assert.equal(warm.code, 0, `warm-up: ${warm.stdout}${warm.stderr}`);
    const before = await baseline(daemon.pid);

    const run = await daemon.child.explain(() => fuzz(FRAMES, SEED));
    const summary = lastJson<FuzzSummary>(run, "h2_fuzz.py");
    await log(
      `h2 fuzz: ${summary.frames} frames (${summary.bytes} bytes) over ${summary.connections} ` +
        `connections in ${summary.seconds} s, seed ${summary.seed}; closes ` +
        `${JSON.stringify(summary.closes)}; GOAWAY codes ${
          JSON.stringify(summary.goaway_codes)
        }; ` +
        `final ListPods grpc-status ${summary.final_grpc_status}`,
    );
    assert.deepEqual(summary.connect_errors, {}, "connections refused during the fuzz");
    assert.ok(summary.frames >= FRAMES, `${summary.frames} frames sent of ${FRAMES}`);
    assert.equal(summary.final_grpc_status, "0", run.stderr);
    assert.equal(run.code, 0, run.stderr);
    await assertDaemonHealthy(daemon, before, "h2 fuzz");
  },
});
