/**
 * `promtool check metrics` on a text exposition: Prometheus' own parser and
 * linter, the judge of what `/metrics` writes. Tests that use it gate on
 * `requirePeer(PEERS.promtool)` (peers.ts).
 *
 * @module
 */

import assert from "node:assert/strict";

/** Where Debian's `prometheus` package puts promtool. */
export const PROMTOOL = "/usr/bin/promtool";

/**
 * Runs `promtool check metrics` on an exposition.
 *
 * @param body The exposition.
 * @returns Its exit code and everything it printed.
 */
export async function promtoolCheckMetrics(body: string): Promise<{ code: number; out: string }> {
  const check = new Deno.Command(PROMTOOL, {
    args: ["check", "metrics"],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = check.stdin.getWriter();
  await writer.write(new TextEncoder().encode(body));
  await writer.close();
  const result = await check.output();
  const out = new TextDecoder().decode(result.stdout) + new TextDecoder().decode(result.stderr);
  return { code: result.code, out };
}

/**
 * Asserts promtool parses an exposition and has nothing to say about it.
 *
 * @param body The exposition.
 */
export async function assertPromtoolAccepts(body: string): Promise<void> {
  const { code, out } = await promtoolCheckMetrics(body);
  assert.equal(code, 0, out);
  assert.equal(out.trim(), "", `promtool has complaints:\n${out}`);
}
