// A second `serve --simulate` on the socket of a running one fails, and
// leaves the running daemon whole: its API socket and its simulated
// runtime's socket stay, and it keeps answering from that runtime.
import assert from "node:assert/strict";
import { dirname } from "node:path";
import { RUN_FLAGS, startSimDaemon } from "../client/_sim_daemon.ts";
import { CriClient } from "../../src/sources/cri/mod.ts";

const MAIN = new URL("../../main.ts", import.meta.url).pathname;

Deno.test("a failed second serve --simulate leaves the running daemon's sockets alone", async () => {
  await using sim = await startSimDaemon();
  const criSocket = `${dirname(sim.socket)}/simulated-cri.sock`;
  assert.ok((await Deno.lstat(criSocket)).isSocket);
  for (let i = 0; i < 2; i++) {
    const second = await new Deno.Command(Deno.execPath(), {
      args: [
        ...RUN_FLAGS,
        MAIN,
        "serve",
        "--simulate",
        "--socket",
        sim.socket,
        "--metrics-bind-address",
        "127.0.0.1:0",
      ],
      stdout: "null",
      stderr: "piped",
    }).output();
    assert.notEqual(second.code, 0);
    assert.match(new TextDecoder().decode(second.stderr), /accepting connections there/);
  }
  assert.ok((await Deno.lstat(sim.socket)).isSocket);
  assert.ok((await Deno.lstat(criSocket)).isSocket);
  // The running daemon's runtime still answers on its socket.
  const client = new CriClient(`unix://${criSocket}`);
  try {
    const version = await client.version();
    assert.ok(version.runtimeName !== "");
  } finally {
    client.close();
  }
});
