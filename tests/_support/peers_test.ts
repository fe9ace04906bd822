// The gate of every test that needs a program from outside Deno: ignored
// with its reason when the peer is missing, failing under
// PODS_API_REQUIRE_PEERS=1 (CI), never silently skipped.
import assert from "node:assert/strict";
import { type PeerRequirement, PEERS, requirePeer } from "./peers.ts";

const MISSING: PeerRequirement = {
  what: "frobnicator (/usr/bin/frobnicate)",
  install: "apt-get install frobnicator",
  probe: () => false,
};
const PRESENT: PeerRequirement = { what: "sh", install: "none", probe: () => true };

/** Runs `fn` with PODS_API_REQUIRE_PEERS set to `value` (or unset), then restores it. */
function withRequirePeers<T>(value: string | undefined, fn: () => T): T {
  const saved = Deno.env.get("PODS_API_REQUIRE_PEERS");
  const set = (v: string | undefined) =>
    v === undefined
      ? Deno.env.delete("PODS_API_REQUIRE_PEERS")
      : Deno.env.set("PODS_API_REQUIRE_PEERS", v);
  set(value);
  try {
    return fn();
  } finally {
    set(saved);
  }
}

Deno.test("requirePeer() ignores a test whose peer is missing, and says why in its name", () => {
  const gate = withRequirePeers(undefined, () => requirePeer(PRESENT, MISSING));
  assert.equal(gate.ignore, true);
  assert.equal(gate.missing, "frobnicator (/usr/bin/frobnicate): apt-get install frobnicator");
  assert.equal(
    gate.name("frobnicates"),
    "frobnicates (ignored: frobnicator (/usr/bin/frobnicate): apt-get install frobnicator)",
  );
});

Deno.test("requirePeer() under PODS_API_REQUIRE_PEERS=1 runs the test and fails it at once", () => {
  const gate = withRequirePeers("1", () => requirePeer(MISSING));
  assert.equal(gate.ignore, false);
  assert.equal(gate.name("frobnicates"), "frobnicates");
  assert.throws(() => gate.check(), /Missing test peer: frobnicator .*apt-get install frobnicator/);
});

Deno.test("requirePeer() lets a test with every peer run, whatever the mode", () => {
  for (const mode of [undefined, "1"]) {
    const gate = withRequirePeers(mode, () => requirePeer(PRESENT));
    assert.equal(gate.ignore, false);
    assert.equal(gate.missing, undefined);
    assert.equal(gate.name("runs"), "runs");
    gate.check();
  }
});

Deno.test("PEERS says how to get each peer", () => {
  for (const [key, peer] of Object.entries(PEERS)) {
    assert.ok(peer.what !== "" && peer.install !== "", key);
  }
});
