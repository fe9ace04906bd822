// grpc-js 1.14.7 under Node (installed with npm into a cache directory)
// against the daemon child: connection cycles of unary calls, watches,
// cancels, deadlines and every close order, including cancel-then-close,
// which sends RST_STREAM, GOAWAY, EOF (the order that aborted Deno's
// node:http2 on 2.9.4-2.9.6), then a kill -9 mid-run.
import { GRPCJS_CLIENT, GRPCJS_VERSION, grpcJsCycles } from "./_grpcjs_peer.ts";
import { exists, PEERS, requirePeer } from "../_support/peers.ts";
import { ROOT, runPeer } from "./_peer_harness.ts";

const peer = requirePeer(PEERS.node, PEERS.npm);

/** Where grpc-js for Node is installed (reused across runs). */
function installDir(): string {
  const base = Deno.env.get("PODS_API_NPM_PEERS") ??
    `${Deno.env.get("XDG_CACHE_HOME") ?? `${Deno.env.get("HOME") ?? "/tmp"}/.cache`}/pods-api`;
  return `${base}/grpc-js-${GRPCJS_VERSION}`;
}

async function installGrpcJs(): Promise<string> {
  const dir = installDir();
  const entry = `${dir}/node_modules/@grpc/grpc-js/build/src/index.js`;
  if (exists(entry)) return entry;
  await Deno.mkdir(dir, { recursive: true });
  const npm = await new Deno.Command("npm", {
    args: [
      "install",
      "--prefix",
      dir,
      "--no-save",
      "--no-package-lock",
      "--no-audit",
      "--no-fund",
      "--ignore-scripts",
      `@grpc/grpc-js@${GRPCJS_VERSION}`,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!npm.success || !exists(entry)) {
    throw new Error(
      `npm install @grpc/grpc-js@${GRPCJS_VERSION} into ${dir} failed: ${
        new TextDecoder().decode(npm.stderr)
      }`,
    );
  }
  return entry;
}

Deno.test({
  name: peer.name(
    "a grpc-js client under Node survives every close order for many connection cycles",
  ),
  ignore: peer.ignore,
  async fn() {
    peer.check();
    const entry = await installGrpcJs();
    await grpcJsCycles(
      "grpc-js (Node)",
      (args, killWhen) =>
        runPeer("node", [GRPCJS_CLIENT, "--grpc", `file://${entry}`, ...args], {
          timeoutMs: 30 * 60_000,
          cwd: ROOT,
          ...(killWhen === undefined ? {} : { killWhen }),
        }),
    );
  },
});
