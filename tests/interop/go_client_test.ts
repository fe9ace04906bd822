// A grpc-go 1.33 client (Debian golang-google-grpc-dev, built in GOPATH
// mode; tests/interop/go/podsclient) against the daemon child: connection
// cycles of unary calls on both services, a cancelled watch, a deadline, and
// every close order it has (cancel then close, close under an open stream,
// graceful; grpc-go 1.33 sends no GOAWAY), then a kill -9 mid-run. The
// daemon must stay up, with its fds and RSS back where they started.
import { PEERS, requirePeer } from "../_support/peers.ts";
import { buildGo, runPeer } from "./_peer_harness.ts";
import { peerCycles } from "./_peer_cycles.ts";

const peer = requirePeer(PEERS.go, PEERS.grpcGo);

Deno.test({
  name: peer.name("a grpc-go client survives every close order for many connection cycles"),
  ignore: peer.ignore,
  async fn() {
    peer.check();
    const client = await buildGo("./tests/interop/go/podsclient");
    await peerCycles({
      label: "grpc-go",
      run: (args, killWhen) =>
        runPeer(client, args, {
          timeoutMs: 30 * 60_000,
          ...(killWhen === undefined ? {} : { killWhen }),
        }),
      ciCycles: 1000,
      warmCycles: 200,
      flagPrefix: "-",
      statusNames: ["OK", "Canceled", "DeadlineExceeded", "NotFound"],
      killAt: "progress 20\n",
    });
  },
});
