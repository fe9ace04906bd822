// The daemon's log stays clean while the HTTP API serves: Deno's
// "request.signal aborts on successful responses (legacy behavior)" warning
// came from a watch handler reading `request.signal`; the handler now learns
// of the client's end from its response instead.
import assert from "node:assert/strict";
import { startServeChild } from "../reliability/_child.ts";

/** A port free a moment ago, for a daemon child that must be told its HTTP address. */
function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

/** Reads a response's body to its end; returns its text. */
async function drain(res: Response): Promise<string> {
  return await res.text();
}

Deno.test("serving the HTTP API writes no Deno deprecation warning to the daemon's log", async () => {
  const port = freePort();
  await using child = await startServeChild(["--http-bind-address", `127.0.0.1:${port}`]);
  const api = `http://127.0.0.1:${port}`;
  await child.explain(async () => {
    const list = await fetch(`${api}/api/v1/pods`);
    assert.equal(list.status, 200);
    const pods = (await list.json()).items as Array<
      { metadata: { namespace: string; name: string } }
    >;
    assert.ok(pods.length > 0, "the simulated node has pods");
    const { namespace, name } = pods[0]!.metadata;
    assert.equal((await fetch(`${api}/api/v1/namespaces/${namespace}/pods/${name}`)).status, 200);
    await drain(await fetch(`${api}/pods`));
    await drain(await fetch(`${api}/api/v1/nodes`));
    // A watch the server ends in full (the case Deno warned about), one that
    // answers 410 at once, and one the client cuts.
    const ended = await drain(await fetch(`${api}/api/v1/pods?watch=true&timeoutSeconds=1`));
    assert.match(ended, /"type":"ADDED"/);
    const gone = await drain(await fetch(`${api}/api/v1/pods?watch=true&resourceVersion=bogus`));
    assert.match(gone, /"code":410/);
    const client = new AbortController();
    const cut = await fetch(`${api}/api/v1/pods?watch=true`, { signal: client.signal });
    const reader = cut.body!.getReader();
    assert.equal((await reader.read()).done, false);
    client.abort();
    await reader.cancel().catch(() => {});
  });
  child.process.kill("SIGTERM");
  const { code, stderr, stdout } = await child.output;
  assert.equal(code, 0, stderr);
  const log = stderr + stdout;
  assert.match(log, /pods-api started/, "the daemon's log was captured");
  assert.doesNotMatch(log, /request\.signal|legacy behavior|deprecat/i);
  assert.doesNotMatch(stderr, /^Deno\.serve:|^Warning/m);
});
