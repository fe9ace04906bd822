// Autodetection and a runtime socket that may not be opened: when no
// candidate answers, one that is there but refused (here by the Deno
// permissions of a child process, which may read every candidate and use the
// network but write only some) ends the wait as a configuration error,
// unless another candidate is there and may still come up.
import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url);
const DECODER = new TextDecoder();
const SCRIPT = `
import { detectRuntimeEndpoint } from ${
  JSON.stringify(new URL("src/sources/cri/mod.ts", ROOT).href)
};
try {
  await detectRuntimeEndpoint({ candidates: JSON.parse(Deno.args[0]), timeoutMs: 2000 });
  console.log("found");
} catch (err) {
  console.log(JSON.stringify({ name: err.name, message: err.message }));
}
`;

async function detect(
  dir: string,
  candidates: string[],
): Promise<{ name: string; message: string }> {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "--frozen",
      `--config=${new URL("deno.json", ROOT).pathname}`,
      "--allow-read",
      "--allow-net",
      `--allow-write=${dir}/open`,
      `${dir}/detect.ts`,
      JSON.stringify(candidates.map((p) => `unix://${p}`)),
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(code, 0, DECODER.decode(stderr));
  return JSON.parse(DECODER.decode(stdout));
}

Deno.test("detectRuntimeEndpoint() ends the wait on a candidate that is there but refused, not on one that may come up", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "pods-api-detect-" });
  try {
    await Deno.writeTextFile(`${dir}/detect.ts`, SCRIPT);
    await Deno.mkdir(`${dir}/open`);
    await Deno.mkdir(`${dir}/denied`);
    const denied = `${dir}/denied/cri.sock`;
    using _listener = Deno.listen({ transport: "unix", path: denied });
    // A socket file nobody accepts on (a runtime restarting): connect is refused, not denied.
    const stale = `${dir}/open/stale.sock`;
    const bound = await new Deno.Command("python3", {
      args: ["-c", "import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])", stale],
    }).output();
    assert.equal(bound.code, 0, DECODER.decode(bound.stderr));
    assert.ok((await Deno.lstat(stale)).isSocket);
    const absent = `${dir}/open/absent.sock`;

    await t.step("refused alone: a configuration error naming it", async () => {
      const r = await detect(dir, [denied]);
      assert.equal(r.name, "RuntimeSocketAccessError");
      assert.match(r.message, new RegExp(`^Cannot open the container runtime socket ${denied}: `));
      assert.match(r.message, /lack write access/);
    });
    await t.step("refused, the other candidate absent: a configuration error", async () => {
      assert.equal((await detect(dir, [absent, denied])).name, "RuntimeSocketAccessError");
    });
    await t.step("refused, another candidate there but not answering: waited for", async () => {
      const r = await detect(dir, [denied, stale]);
      assert.equal(r.name, "SourceUnavailableError", r.message);
      assert.match(r.message, new RegExp(`${denied}.*Requires write access`));
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
