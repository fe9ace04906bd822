// grpc-js 1.14.7 under Deno (the version deno.json pins, from the npm cache;
// a separate process, since a Deno grpc-js client itself can abort) against
// the daemon child: connection cycles of unary calls, watches, cancels,
// deadlines and every close order, then a kill -9 mid-run.
import { GRPCJS_CLIENT, GRPCJS_VERSION, grpcJsCycles } from "./_grpcjs_peer.ts";
import { ROOT, runPeer } from "./_peer_harness.ts";

Deno.test({
  name: "a grpc-js client under Deno survives every close order for many connection cycles",
  async fn() {
    await grpcJsCycles(
      "grpc-js (Deno)",
      (args, killWhen) =>
        runPeer(Deno.execPath(), [
          "run",
          "--frozen",
          "--allow-read",
          "--allow-write",
          "--allow-net",
          "--allow-env",
          "--allow-sys",
          GRPCJS_CLIENT,
          "--grpc",
          `npm:@grpc/grpc-js@${GRPCJS_VERSION}`,
          ...args,
        ], {
          timeoutMs: 30 * 60_000,
          cwd: ROOT,
          ...(killWhen === undefined ? {} : { killWhen }),
        }),
    );
  },
});
