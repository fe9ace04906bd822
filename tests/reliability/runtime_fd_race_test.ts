// Known runtime issue (RELIABILITY.md): Deno 2.9.3 closes every node:net UNIX
// socket's descriptor twice. The tests' tree removal must not lose a directory
// stream to that second close, or the whole test process aborts in closedir.
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { SERVE_PERMISSIONS } from "./_child.ts";
import { LONG } from "./_support.ts";

const CHILD = fileURLToPath(new URL("./_fd_race_child.ts", import.meta.url));

Deno.test("grpc-js clients closing beside the tests' tree removals never abort the runtime", async () => {
  // With `await Deno.remove(dir, { recursive: true })` in the child instead of
  // removeTree, 4 of 4 runs aborted (closedir EBADF) within these 250 clients.
  const clients = LONG ? 5_000 : 250;
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...SERVE_PERMISSIONS,
      CHILD,
      String(clients),
      "4",
    ],
    stdout: "piped",
    stderr: "piped",
    stdin: "null",
  }).output();
  const stderr = new TextDecoder().decode(out.stderr);
  assert.doesNotMatch(stderr, /panicked|closedir/, stderr.slice(-3000));
  assert.equal(out.code, 0, stderr.slice(-3000));
  const result = JSON.parse(new TextDecoder().decode(out.stdout).trim().split("\n").at(-1)!);
  assert.equal(result.clients, clients);
  assert.equal(result.failedCalls, 0);
  assert.ok(result.removed > 0, "the removal loops ran");
});

Deno.test("test files with grpc-js clients remove trees with removeTree, never Deno.remove recursively", async () => {
  const tests = fileURLToPath(new URL("../", import.meta.url));
  const offenders: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for await (const entry of Deno.readDir(dir)) {
      const path = `${dir}${entry.name}`;
      if (entry.isDirectory) await walk(`${path}/`);
      else if (entry.name.endsWith(".ts") && path !== fileURLToPath(import.meta.url)) {
        const text = await Deno.readTextFile(path);
        const clients = text.includes('"@grpc/grpc-js"') || text.includes("rawClient(");
        if (clients && /Deno\.remove\([^)]*recursive: true/.test(text)) offenders.push(path);
      }
    }
  };
  await walk(tests);
  assert.deepEqual(offenders, [], "use removeTree (tests/_support/remove_tree.ts)");
});
