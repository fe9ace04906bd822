// Keeps the README's flag and metric tables true to the code.
import assert from "node:assert/strict";
import { SERVE_FLAGS } from "../src/config_flags.ts";
import { createMetricsRegistry } from "../src/metrics/registry.ts";

const README = await Deno.readTextFile(new URL("../README.md", import.meta.url));

Deno.test("README documents every serve flag", () => {
  for (const name of Object.keys(SERVE_FLAGS)) {
    assert.match(
      README,
      new RegExp("\\|\\s*`--" + name + "`\\s*\\|"),
      `--${name} missing from README`,
    );
  }
});

Deno.test("README's flag table gives each flag the default serve --help gives", () => {
  for (const [name, flag] of Object.entries(SERVE_FLAGS)) {
    if (flag.default === "") continue;
    const row = new RegExp("^\\|\\s*`--" + name + "`\\s*\\|\\s*([^|]*?)\\s*\\|", "m").exec(README);
    assert.equal(row?.[1], "`" + String(flag.default) + "`", `--${name}'s default in README`);
  }
});

Deno.test("README documents every metric the daemon declares", async () => {
  // A /proc/self reader that works, so every process metric is registered too.
  const status = "VmSize:\t4 kB\nVmRSS:\t2 kB\nVmData:\t1 kB\n";
  const proc = { readText: () => status, countEntries: () => 1 };
  const { expose } = createMetricsRegistry({ processMetrics: true, proc });
  const names = [...(await expose()).matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!);
  assert.ok(names.length > 10);
  for (const name of names) {
    assert.match(README, new RegExp("`" + name + "`"), `${name} missing from README`);
  }
});

Deno.test("README starts with the demo and test commands", () => {
  const lines = README.split("\n");
  assert.match(lines[3]!, /^npx -y deno@2\.9\.3 task demo /);
  assert.match(lines[4]!, /^npx -y deno@2\.9\.3 task test /);
});
