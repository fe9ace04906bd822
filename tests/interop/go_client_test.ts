// A grpc-go 1.33 client (Debian golang-google-grpc-dev, built in GOPATH
// mode; tests/interop/go/podsclient) against the daemon child: connection
// cycles of unary calls on both services, a cancelled watch, a deadline, and
// every close order it has (cancel then close, close under an open stream,
// graceful; grpc-go 1.33 sends no GOAWAY), then a kill -9 mid-run. The
// daemon must stay up, with its fds and RSS back where they started.
import assert from "node:assert/strict";
import {
  assertDaemonHealthy,
  baseline,
  buildGo,
  cycleCount,
  formatStatuses,
  GO_PEER,
  lastJson,
  log,
  peerGate,
  runPeer,
  startPeerDaemon,
} from "./_peer_harness.ts";

interface GoSummary {
  cycles: number;
  "calls_ok": number;
  "watch_events": number;
  statuses: Record<string, number>;
  closes: Record<string, number>;
  unexpected: string[];
  seconds: number;
}

const gate = peerGate(GO_PEER);
const CYCLES = cycleCount(1000);

Deno.test({
  name: "a grpc-go client survives every close order for many connection cycles",
  ignore: gate.ignore,
  async fn() {
    gate.check();
    const client = await buildGo("./tests/interop/go/podsclient");
    await using daemon = await startPeerDaemon();
    const go = (cycles: number, extra: string[] = [], killWhen?: string) =>
      runPeer(client, [
        "-socket",
        daemon.socket,
        "-cycles",
        String(cycles),
        "-parallel",
        "4",
        ...extra,
      ], { timeoutMs: 30 * 60_000, ...(killWhen === undefined ? {} : { killWhen }) });

    // Warm-up (JIT, pools, lazily opened files) before the baseline.
    const warm = lastJson<GoSummary>(await go(200), "podsclient warm-up");
    assert.deepEqual(warm.unexpected, []);
    const before = await baseline(daemon.pid);

    const run = await daemon.child.explain(() => go(CYCLES));
    const summary = lastJson<GoSummary>(run, "podsclient");
    await log(
      `grpc-go: ${summary.cycles} cycles in ${summary.seconds.toFixed(1)} s, ` +
        `${summary.calls_ok} calls OK, ${summary.watch_events} watch events; statuses ` +
        `${formatStatuses(summary.statuses)}; closes ${formatStatuses(summary.closes)}`,
    );
    assert.deepEqual(summary.unexpected, [], run.stderr);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(summary.cycles, CYCLES);
    for (const code of ["OK", "Canceled", "DeadlineExceeded", "NotFound"]) {
      assert.ok((summary.statuses[code] ?? 0) > 0, `no ${code} seen`);
    }

    // kill -9 with calls in flight on four connections.
    const killed = await go(1_000_000, ["-progress"], "progress 20\n");
    assert.notEqual(killed.code, 0, "podsclient should have been killed");

    await assertDaemonHealthy(daemon, before, "grpc-go");
  },
});
