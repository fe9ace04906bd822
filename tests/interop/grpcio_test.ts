// A Python grpcio (C-core, Debian python3-grpcio) client against the daemon
// child: connection cycles of unary calls, watches, cancels, deadlines and
// every close order it has (cancel then close, which sends RST_STREAM then
// EOF with no GOAWAY; close under an open stream; graceful), then a kill -9
// mid-run. The daemon must stay up, with fds and RSS back where they started.
import assert from "node:assert/strict";
import {
  assertDaemonHealthy,
  baseline,
  cycleCount,
  formatStatuses,
  GRPCIO_PEER,
  lastJson,
  log,
  peerGate,
  runPeer,
  startPeerDaemon,
} from "./_peer_harness.ts";

interface PySummary {
  cycles: number;
  "calls_ok": number;
  "watch_events": number;
  statuses: Record<string, number>;
  closes: Record<string, number>;
  unexpected: string[];
  seconds: number;
}

const gate = peerGate(GRPCIO_PEER);
const CLIENT = new URL("./_grpcio_cycles.py", import.meta.url).pathname;
const CYCLES = cycleCount(1000);

Deno.test({
  name: "a grpcio client survives every close order for many connection cycles",
  ignore: gate.ignore,
  async fn() {
    gate.check();
    await using daemon = await startPeerDaemon();
    const client = (cycles: number, extra: string[] = [], killWhen?: string) =>
      runPeer("/usr/bin/python3", [
        CLIENT,
        "--socket",
        daemon.socket,
        "--cycles",
        String(cycles),
        "--parallel",
        "4",
        ...extra,
      ], { timeoutMs: 30 * 60_000, ...(killWhen === undefined ? {} : { killWhen }) });

    const warm = lastJson<PySummary>(await client(200), "grpcio warm-up");
    assert.deepEqual(warm.unexpected, []);
    const before = await baseline(daemon.pid);

    const run = await daemon.child.explain(() => client(CYCLES));
    const summary = lastJson<PySummary>(run, "grpcio");
    await log(
      `grpcio: ${summary.cycles} cycles in ${summary.seconds.toFixed(1)} s, ` +
        `${summary.calls_ok} calls OK, ${summary.watch_events} watch events; statuses ` +
        `${formatStatuses(summary.statuses)}; closes ${formatStatuses(summary.closes)}`,
    );
    assert.deepEqual(summary.unexpected, [], run.stderr);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(summary.cycles, CYCLES);
    for (const code of ["OK", "CANCELLED", "DEADLINE_EXCEEDED", "NOT_FOUND"]) {
      assert.ok((summary.statuses[code] ?? 0) > 0, `no ${code} seen`);
    }

    // kill -9 with calls in flight on four connections.
    const killed = await client(1_000_000, ["--progress"], "progress 20\n");
    assert.notEqual(killed.code, 0, "the grpcio client should have been killed");

    await assertDaemonHealthy(daemon, before, "grpcio");
  },
});
