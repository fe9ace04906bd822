// docs/OPERATIONS.md's troubleshooting quotes the daemon's own error lines:
// an operator searches the docs for what the log says.
import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url);
const OPS = await Deno.readTextFile(new URL("docs/OPERATIONS.md", ROOT));
const DECODER = new TextDecoder();

Deno.test("the metrics port in use: OPERATIONS quotes the line serve prints", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pods-api-troubleshooting-" });
  using taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const port = taken.addr.port;
    const { code, stderr } = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--frozen",
        `--config=${new URL("deno.json", ROOT).pathname}`,
        "--allow-read",
        "--allow-write",
        "--allow-net",
        "--allow-env",
        "--allow-sys",
        new URL("main.ts", ROOT).pathname,
        "serve",
        "--simulate",
        `--socket=${dir}/pods-api.sock`,
        "--kubelet-compat-socket=",
        `--metrics-bind-address=127.0.0.1:${port}`,
      ],
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).output();
    assert.equal(code, 1);
    const errors = DECODER.decode(stderr).trim().split("\n").map((l) => JSON.parse(l))
      .filter((l) => l.level === "error");
    assert.equal(errors.length, 1);
    const said = String(errors[0].error).replace(/^Error: /, "").replaceAll(`:${port}`, ":9469");
    assert.equal(
      said,
      "Cannot listen on 127.0.0.1:9469 (--metrics-bind-address): address already in use",
    );
    assert.ok(OPS.replace(/\s+/g, " ").includes(`(\`${said}\` at start, exit 1)`), said);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
