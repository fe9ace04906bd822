// h2spec (the HTTP/2 conformance suite, ../shared/tools/h2spec) against the
// daemon child through a loopback TCP → UNIX socket byte bridge: every case
// must pass, and the daemon must still be up afterwards. The failing cases
// are printed by name.
import assert from "node:assert/strict";
import {
  assertDaemonHealthy,
  baseline,
  exists,
  H2SPEC,
  log,
  peerGate,
  runPeer,
  startPeerDaemon,
} from "./_peer_harness.ts";
import { startTcpBridge } from "./_tcp_bridge.ts";

const gate = peerGate([{
  what: `h2spec at ${H2SPEC} (or PODS_API_H2SPEC)`,
  apt: "none: it is built in ../shared/tools (see its README)",
  probe: () => exists(H2SPEC),
}]);
// Debian does not package h2spec: .ci/run sets this only on a machine
// without the workplace's copy, and says so loudly.
if (Deno.env.get("PODS_API_H2SPEC_OPTIONAL") === "1" && !exists(H2SPEC)) gate.ignore = true;

/** One `<testcase>` of the JUnit report. */
interface CaseResult {
  /** Spec id, section and case title, e.g. "http2/5.1 5.1. Stream States: Sends a DATA frame". */
  name: string;
  failed: boolean;
  skipped: boolean;
  message: string;
}

function unescapeXml(s: string): string {
  return s.replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&quot;", '"')
    .replaceAll("&#39;", "'").replaceAll("&apos;", "'").replaceAll("&amp;", "&");
}

function attribute(attributes: string, name: string): string {
  return unescapeXml(new RegExp(`(?:^|\\s)${name}="([^"]*)"`).exec(attributes)?.[1] ?? "");
}

/**
 * Reads h2spec's JUnit report: one entry per test case (h2spec names a case
 * by its `classname`; a failed case holds an `<error>` or `<failure>`).
 *
 * @param xml The report.
 * @returns The cases in order.
 */
function parseJunit(xml: string): CaseResult[] {
  const out: CaseResult[] = [];
  const suite = /<testsuite\b([^>]*)>([\s\S]*?)<\/testsuite>/g;
  for (const s of xml.matchAll(suite)) {
    const section = `${attribute(s[1]!, "package")} ${attribute(s[1]!, "name")}`;
    const testcase = /<testcase\b([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g;
    for (const c of s[2]!.matchAll(testcase)) {
      const body = c[3] ?? "";
      const failure = /<(failure|error)\b([^>]*)>([\s\S]*?)<\/\1>/.exec(body) ??
        /<(failure|error)\b([^>]*)\/>()/.exec(body);
      const message = failure === null
        ? ""
        : (attribute(failure[2]!, "message") || unescapeXml(failure[3]!)).trim();
      out.push({
        name: `${section}: ${attribute(c[1]!, "classname") || attribute(c[1]!, "name")}`,
        failed: failure !== null,
        skipped: /<skipped\b/.test(body),
        message: message.replace(/\s+/g, " ").slice(0, 160),
      });
    }
  }
  return out;
}

Deno.test({
  name: "h2spec passes every case against the daemon's socket",
  ignore: gate.ignore,
  async fn() {
    gate.check();
    await using daemon = await startPeerDaemon();
    const before = await baseline(daemon.pid);
    const bridge = startTcpBridge(daemon.socket);
    const report = `${daemon.child.dir}/h2spec.xml`;
    const run = await runPeer(H2SPEC, [
      "-h",
      "127.0.0.1",
      "-p",
      String(bridge.port),
      "-P",
      "/v1alpha1.Pods/ListPods",
      "-o",
      "2",
      "-j",
      report,
    ], { timeoutMs: 10 * 60_000 });
    // h2spec has exited, so its sockets are closed: close the bridge's too,
    // as the kernel would close a direct peer's.
    await bridge[Symbol.asyncDispose]();
    const cases = exists(report) ? parseJunit(await Deno.readTextFile(report)) : [];
    const failed = cases.filter((c) => c.failed);
    const skipped = cases.filter((c) => c.skipped).length;
    await log(
      `h2spec: ${cases.length - failed.length - skipped} of ${cases.length} cases passed, ` +
        `${failed.length} failed, ${skipped} skipped (exit ${run.code}, ` +
        `${bridge.accepted} connections)`,
    );
    for (const c of failed) await log(`  FAILED ${c.name}: ${c.message}`);
    const ended = await Promise.race([
      daemon.child.output,
      new Promise<undefined>((r) => setTimeout(r, 100, undefined)),
    ]);
    if (ended !== undefined) {
      assert.fail(
        `the daemon exited with ${ended.code} during h2spec ` +
          `(${cases.length - failed.length} of ${cases.length} passed): ${
            ended.stderr.slice(-1500)
          }`,
      );
    }
    assert.ok(cases.length > 0, `h2spec wrote no report: ${run.stdout.slice(-1500)}`);
    await assertDaemonHealthy(daemon, before, "h2spec");
    assert.deepEqual(failed.map((c) => c.name), [], "h2spec cases failed");
    assert.equal(run.code, 0, "h2spec exit code");
  },
});
