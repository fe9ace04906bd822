/**
 * The daemon's malloc setting (scripts/_malloc_env.ts) is carried by every
 * start path that can set the environment.
 *
 * @module
 */

import assert from "node:assert/strict";
import { parse } from "yaml";
import { DAEMON_MALLOC_ENV, mallocEnvEntries } from "../../scripts/_malloc_env.ts";

const ROOT = new URL("../../", import.meta.url);
const read = (path: string) => Deno.readTextFileSync(new URL(path, ROOT));

Deno.test("deno task start and demo set it for the daemon", () => {
  const tasks = (JSON.parse(read("deno.json")) as { tasks: Record<string, string> }).tasks;
  for (const name of ["start", "demo"]) {
    assert.ok(tasks[name]!.startsWith(`${mallocEnvEntries().join(" ")} deno run `), name);
  }
});

Deno.test("the systemd unit and the DaemonSet set it", () => {
  const unit = read("deploy/pods-api.service");
  for (const entry of mallocEnvEntries()) {
    assert.equal([...unit.matchAll(new RegExp(`^Environment=${entry}$`, "gm"))].length, 1, entry);
  }
  const ds = parse(read("deploy/base/daemonset.yaml")) as {
    spec: { template: { spec: { containers: { env?: { name: string; value?: string }[] }[] } } };
  };
  const env = ds.spec.template.spec.containers[0]!.env ?? [];
  for (const [name, value] of Object.entries(DAEMON_MALLOC_ENV)) {
    assert.deepEqual(env.filter((e) => e.name === name).map((e) => e.value), [value], name);
  }
});

// The image's configuration is checked where it is built: tests/ship/image_test.ts.
