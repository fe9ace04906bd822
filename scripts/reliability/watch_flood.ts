/**
 * Measures a watch flood on each surface: a daemon child (`main.ts serve
 * --simulate --max-watchers N --http-bind-address ...`) per surface, then
 * ATTEMPTS concurrent watch attempts on it (gRPC: spread over CONNECTIONS
 * client connections; HTTP: one fetch each). Prints, per surface, the
 * attempts, how many were accepted and refused (and with what), whether a
 * ListPods on a fresh connection was served meanwhile, and the daemon's RSS
 * and open fds before, during and after (the watchers gone). Nothing is
 * asserted: the figures go to RELIABILITY.md; the tests
 * (`tests/reliability/watch_flood_test.ts`) check the behaviour.
 *
 *   npx -y deno@2.9.3 run --frozen -A scripts/reliability/watch_flood.ts \
 *     [--attempts 3000] [--max-watchers 100] [--connections 30] [--checkout DIR] [--surface S]
 *
 * `--surface` (repeatable): `v1alpha1`, `v1`, `podsapi_v1`, `http` or `mixed` (the attempts
 * spread over all four in turn); all five by default. `--checkout DIR` runs another
 * checkout's `main.ts` (to compare with an older build).
 *
 * @module
 */

// deno-lint-ignore-file no-console

import * as grpc from "@grpc/grpc-js";
import { Buffer } from "node:buffer";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { encodeWatchRequest } from "../../src/proto/mod.ts";
import {
  podQueryServiceDefinition,
  podsServiceDefinition,
} from "../../tests/_support/pods_service_definition.ts";
import { processUsage, SERVE_PERMISSIONS } from "../../tests/reliability/_child.ts";

type Surface = "v1alpha1" | "v1" | "podsapi_v1" | "http";
const SURFACES: readonly Surface[] = ["v1alpha1", "v1", "podsapi_v1", "http"];
/** A surface to flood, or `mixed`: the attempts spread over all four in turn. */
type Target = Surface | "mixed";

const { values: args } = parseArgs({
  args: Deno.args,
  options: {
    attempts: { type: "string", default: "3000" },
    "max-watchers": { type: "string", default: "100" },
    connections: { type: "string", default: "30" },
    checkout: { type: "string", default: fileURLToPath(new URL("../..", import.meta.url)) },
    surface: { type: "string", multiple: true },
  },
});
const ATTEMPTS = Number(args.attempts);
const MAX_WATCHERS = Number(args["max-watchers"]);
const CONNECTIONS = Number(args.connections);
const MAIN = `${args.checkout.replace(/\/$/, "")}/main.ts`;
const targets = (args.surface ?? [...SURFACES, "mixed"]) as Target[];

/** What one attempt came to. */
interface Outcome {
  accepted: boolean;
  /** `OK`, a gRPC code name, or an HTTP status. */
  answer: string;
  close(): Promise<void>;
}

interface Daemon {
  pid: number;
  socket: string;
  httpPort: number;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return await Promise.resolve(port);
}

async function startDaemon(): Promise<Daemon> {
  const dir = await Deno.makeTempDir({ prefix: "pods-api-flood-" });
  await Deno.mkdir(`${dir}/run`, { mode: 0o750 });
  const socket = `${dir}/run/pods-api.sock`;
  const httpPort = await freePort();
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...SERVE_PERMISSIONS,
      MAIN,
      "serve",
      "--simulate",
      "--socket",
      socket,
      "--metrics-bind-address",
      "127.0.0.1:0",
      "--http-bind-address",
      `127.0.0.1:${httpPort}`,
      "--max-watchers",
      String(MAX_WATCHERS),
      "--log-level",
      "error",
    ],
    stdout: "null",
    stderr: "inherit",
    stdin: "null",
  }).spawn();
  const probe = grpcClient(socket, "v1alpha1");
  try {
    for (let i = 0; i < 600; i++) {
      if ((await listPods(probe)) === "OK") break;
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    probe.close();
  }
  return {
    pid: child.pid,
    socket,
    httpPort,
    async stop() {
      child.kill("SIGTERM");
      await child.status;
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}

type Client = grpc.Client & Record<string, (...args: unknown[]) => unknown>;

function grpcClient(socket: string, surface: Exclude<Surface, "http">): Client {
  const definition = surface === "podsapi_v1"
    ? podQueryServiceDefinition()
    : podsServiceDefinition(surface === "v1" ? "Pods" : "v1alpha1.Pods");
  const Ctor = grpc.makeGenericClientConstructor(definition, surface);
  // Each client its own connection.
  return new Ctor(`unix:${socket}`, grpc.credentials.createInsecure(), {
    "grpc.use_local_subchannel_pool": 1,
    "grpc.max_receive_message_length": -1,
  }) as unknown as Client;
}

function listPods(client: Client): Promise<string> {
  return new Promise((resolve) => {
    (client.ListPods as (r: Buffer, cb: (e: grpc.ServiceError | null) => void) => void).call(
      client,
      Buffer.alloc(0),
      (err) => resolve(err ? grpc.status[err.code] : "OK"),
    );
  });
}

function grpcAttempt(client: Client, surface: Exclude<Surface, "http">): Promise<Outcome> {
  const call = surface === "podsapi_v1"
    ? (client.Watch as (r: Buffer) => grpc.ClientReadableStream<Buffer>).call(
      client,
      Buffer.from(encodeWatchRequest()),
    )
    : (client.WatchPods as (r: Buffer) => grpc.ClientReadableStream<Buffer>).call(
      client,
      Buffer.alloc(0),
    );
  const ended = new Promise<void>((resolve) => {
    call.on("error", () => resolve());
    call.on("end", () => resolve());
  });
  const close = async () => {
    call.cancel();
    await ended;
  };
  return new Promise((resolve) => {
    call.once("data", () => resolve({ accepted: true, answer: "OK", close }));
    call.on(
      "error",
      (err: grpc.ServiceError) =>
        resolve({ accepted: false, answer: grpc.status[err.code] ?? String(err.code), close }),
    );
  });
}

async function httpAttempt(port: number, pool: Deno.HttpClient): Promise<Outcome> {
  const client = new AbortController();
  try {
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/pods?watch=true`, {
      signal: client.signal,
      client: pool,
    });
    if (res.status !== 200) {
      await res.body?.cancel();
      return { accepted: false, answer: String(res.status), close: () => Promise.resolve() };
    }
    const reader = res.body!.getReader();
    await reader.read();
    return {
      accepted: true,
      answer: "200",
      async close() {
        client.abort();
        await reader.cancel().catch(() => {});
      },
    };
  } catch (err) {
    return {
      accepted: false,
      answer: `error: ${(err as Error).name}`,
      close: () => Promise.resolve(),
    };
  }
}

function mib(kib: number): string {
  return `${Math.round(kib / 1024)} MiB`;
}

async function floodOne(target: Target) {
  const daemon = await startDaemon();
  // Each gRPC surface's attempts spread over CONNECTIONS connections of its own.
  const clients = new Map<Surface, Client[]>();
  // The HTTP flood's connections, closed with it (not left idle in a shared pool).
  const pool = Deno.createHttpClient({});
  const sent = new Map<Surface, number>();
  const attempt = (surface: Surface): Promise<Outcome> => {
    if (surface === "http") return httpAttempt(daemon.httpPort, pool);
    let own = clients.get(surface);
    if (own === undefined) {
      own = Array.from({ length: CONNECTIONS }, () => grpcClient(daemon.socket, surface));
      clients.set(surface, own);
    }
    const n = sent.get(surface) ?? 0;
    sent.set(surface, n + 1);
    return grpcAttempt(own[n % CONNECTIONS]!, surface);
  };
  const closeClients = () => {
    for (const own of clients.values()) for (const c of own) c.close();
    clients.clear();
  };
  try {
    const before = await processUsage(daemon.pid);
    const attempts = Array.from(
      { length: ATTEMPTS },
      (_, i) => attempt(target === "mixed" ? SURFACES[i % SURFACES.length]! : target),
    );
    const outcomes = await Promise.all(attempts);
    const during = await processUsage(daemon.pid);
    const lister = grpcClient(daemon.socket, "v1alpha1");
    const list = await listPods(lister);
    lister.close();
    const answers = new Map<string, number>();
    for (const o of outcomes) answers.set(o.answer, (answers.get(o.answer) ?? 0) + 1);
    await Promise.all(outcomes.map((o) => o.close()));
    closeClients();
    pool.close();
    // Let the daemon see every cancel and collect what the watchers held.
    await new Promise((r) => setTimeout(r, 2_000));
    const after = await processUsage(daemon.pid);
    const accepted = outcomes.filter((o) => o.accepted).length;
    const row = {
      surface: target,
      attempts: ATTEMPTS,
      maxWatchers: MAX_WATCHERS,
      accepted,
      refused: ATTEMPTS - accepted,
      answers: Object.fromEntries(answers),
      listPodsDuringFlood: list,
      rssKiB: { before: before.rssKiB, during: during.rssKiB, after: after.rssKiB },
      fds: { before: before.fds, during: during.fds, after: after.fds },
    };
    console.log(JSON.stringify(row));
    console.log(
      `| ${target} | ${ATTEMPTS} | ${accepted} | ${ATTEMPTS - accepted} ${
        JSON.stringify(row.answers)
      } | ${list} | ${mib(before.rssKiB)} / ${mib(during.rssKiB)} / ${
        mib(after.rssKiB)
      } | ${before.fds} / ${during.fds} / ${after.fds} |`,
    );
  } finally {
    closeClients();
    await daemon.stop();
  }
}

console.log(
  `watch flood: ${ATTEMPTS} attempts per surface, --max-watchers ${MAX_WATCHERS}, ${MAIN}`,
);
console.log(
  "| surface | attempts | accepted | refused | ListPods meanwhile | RSS before / flooded / after | fds before / flooded / after |",
);
for (const target of targets) await floodOne(target);
