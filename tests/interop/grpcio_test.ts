// A Python grpcio (C-core, Debian python3-grpcio) client against the daemon
// child: connection cycles of unary calls, watches, cancels, deadlines and
// every close order it has (cancel then close, which sends RST_STREAM then
// EOF with no GOAWAY; close under an open stream; graceful), then a kill -9
// mid-run. The daemon must stay up, with fds and RSS back where they started.
import { PEERS, requirePeer } from "../_support/peers.ts";
import { runPeer } from "./_peer_harness.ts";
import { peerCycles } from "./_peer_cycles.ts";

const peer = requirePeer(PEERS.grpcio);
const CLIENT = new URL("./_grpcio_cycles.py", import.meta.url).pathname;

Deno.test({
  name: peer.name("a grpcio client survives every close order for many connection cycles"),
  ignore: peer.ignore,
  async fn() {
    peer.check();
    await peerCycles({
      label: "grpcio",
      run: (args, killWhen) =>
        runPeer("/usr/bin/python3", [CLIENT, ...args], {
          timeoutMs: 30 * 60_000,
          ...(killWhen === undefined ? {} : { killWhen }),
        }),
      ciCycles: 1000,
      warmCycles: 200,
      flagPrefix: "--",
      statusNames: ["OK", "CANCELLED", "DEADLINE_EXCEEDED", "NOT_FOUND"],
      killAt: "progress 20\n",
    });
  },
});
