// deno.json decides about every npm lifecycle script in the lock file: a
// package with scripts that it neither allows nor denies makes Deno print an
// "Ignored build scripts" warning box when it sets the package up (a fresh
// clone's first task, each run with an empty DENO_DIR).
import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url);

Deno.test("every npm package with lifecycle scripts is allowed or denied in deno.json", async () => {
  const config = JSON.parse(await Deno.readTextFile(new URL("deno.json", ROOT)));
  const lock = JSON.parse(await Deno.readTextFile(new URL("deno.lock", ROOT)));
  const withScripts = Object.entries(lock.npm as Record<string, { scripts?: boolean }>)
    .filter(([, info]) => info.scripts === true)
    .map(([id]) => id.replace(/@[^@]+$/, ""));
  assert.ok(withScripts.includes("protobufjs"), "the lock file records protobufjs's scripts");
  const { allow = [], deny = [] } = config.allowScripts ?? {};
  const decided = new Set([...allow, ...deny].map((s: string) => s.replace(/^npm:/, "")));
  for (const name of withScripts) assert.ok(decided.has(name), `${name} is in allowScripts`);
  // protobufjs's postinstall only checks its command-line tools' dependencies,
  // which pods-api does not use: denied, not run.
  assert.ok(deny.includes("npm:protobufjs"));
});
