// h2spec (the HTTP/2 conformance suite; `PODS_API_H2SPEC`, or the workplace's
// build outside the repository, see `tests/_support/peers.ts`) against the
// daemon child through a loopback TCP → UNIX socket byte bridge: every case
// the suite lists (`h2spec --dryrun`) must be run and pass, none failed and
// none skipped (but those listed in NOT_APPLICABLE, by name and reason), and
// the daemon must still be up afterwards. Failed and skipped cases are
// printed by name.
import assert from "node:assert/strict";
import { assertDaemonHealthy, baseline, log, runPeer, startPeerDaemon } from "./_peer_harness.ts";
import { exists, H2SPEC, PEERS, requirePeer } from "../_support/peers.ts";
import { startTcpBridge } from "./_tcp_bridge.ts";

const peer = requirePeer(PEERS.h2spec);

/**
 * Cases h2spec may skip because they cannot apply to this server, by name
 * (as {@linkcode parseJunit} spells it) with the reason. Empty: the daemon
 * runs every case h2spec has. Exactly this set must be skipped.
 */
const NOT_APPLICABLE: ReadonlyMap<string, string> = new Map();

/**
 * How many cases h2spec has: the numbered lines of `h2spec --dryrun`.
 *
 * @returns The count.
 */
async function listedCases(): Promise<number> {
  const dry = await runPeer(H2SPEC, ["--dryrun"], { timeoutMs: 60_000 });
  assert.equal(dry.code, 0, `h2spec --dryrun: ${dry.stderr}`);
  return dry.stdout.split("\n").filter((line) => /^\s+\d+: /.test(line)).length;
}

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
 * by its `classname`; a failed case holds an `<error>` or `<failure>`, a
 * skipped one `<skipped>`).
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
      const skip = /<skipped\b([^>]*?)\/?>/.exec(body);
      const message = failure !== null
        ? (attribute(failure[2]!, "message") || unescapeXml(failure[3]!)).trim()
        : skip === null
        ? ""
        : attribute(skip[1]!, "message");
      out.push({
        name: `${section}: ${attribute(c[1]!, "classname") || attribute(c[1]!, "name")}`,
        failed: failure !== null,
        skipped: skip !== null,
        message: message.replace(/\s+/g, " ").slice(0, 160),
      });
    }
  }
  return out;
}

Deno.test({
  name: peer.name("h2spec passes every case against the daemon's socket"),
  ignore: peer.ignore,
  async fn() {
    peer.check();
    const listed = await listedCases();
    assert.ok(listed > 0, "h2spec --dryrun lists no case");
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
    const skipped = cases.filter((c) => c.skipped && !c.failed);
    const passed = cases.length - failed.length - skipped.length;
    await log(
      `h2spec: ${passed} of ${listed} listed cases passed, ${failed.length} failed, ` +
        `${skipped.length} skipped, ${cases.length} reported (exit ${run.code}, ` +
        `${bridge.accepted} connections)`,
    );
    for (const c of failed) await log(`  FAILED ${c.name}: ${c.message}`);
    for (const c of skipped) await log(`  SKIPPED ${c.name}: ${c.message}`);
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
    assert.deepEqual(
      skipped.map((c) => c.name).sort(),
      [...NOT_APPLICABLE.keys()].sort(),
      "h2spec skipped cases other than the ones listed as not applicable",
    );
    assert.equal(cases.length, listed, "every case h2spec lists was reported");
    assert.equal(passed, listed - NOT_APPLICABLE.size, "cases passed");
    assert.equal(run.code, 0, "h2spec exit code");
  },
});
