/**
 * A socket that serves only the kubelet's `v1alpha1.Pods`, relayed from a
 * pods-api daemon: what a client meets on a real kubelet's Pods API socket
 * (no `podsapi.v1.PodQuery`: UNIMPLEMENTED), with the daemon's pods.
 *
 * @module
 */

import { PodsClient } from "../../src/client/mod.ts";
import { GrpcServer, type MethodHandler } from "../../src/grpc/server.ts";

/** A running relay. */
export interface KubeletLikeServer extends AsyncDisposable {
  readonly path: string;
}

/**
 * Serves `v1alpha1.Pods` on `path`, each call relayed to the daemon on `upstream`.
 *
 * @param path Where to listen.
 * @param upstream The daemon's socket.
 * @returns The server; dispose it to stop.
 */
export function startKubeletLikeServer(path: string, upstream: string): KubeletLikeServer {
  const client = new PodsClient({ socket: upstream, rateLimitRetries: 0 });
  const methods = new Map<string, MethodHandler>([
    ["/v1alpha1.Pods/ListPods", {
      kind: "unary",
      handle: (request, call) =>
        client.unary("/v1alpha1.Pods/ListPods", request, { signal: call.signal }),
    }],
    ["/v1alpha1.Pods/GetPod", {
      kind: "unary",
      handle: (request, call) =>
        client.unary("/v1alpha1.Pods/GetPod", request, { signal: call.signal }),
    }],
    ["/v1alpha1.Pods/WatchPods", {
      kind: "serverStream",
      async handle(request, call, sink) {
        const stream = client.serverStream(
          "/v1alpha1.Pods/WatchPods",
          { signal: call.signal },
          request,
        );
        for await (const message of stream) await sink.send(message);
      },
    }],
  ]);
  const server = new GrpcServer({ methods });
  const listener = Deno.listen({ transport: "unix", path });
  server.serve(listener);
  return {
    path,
    async [Symbol.asyncDispose]() {
      await server.close(0);
      client.close();
      await Deno.remove(path).catch(() => {});
    },
  };
}
