/**
 * Fake kubelets for the kubelet source tests: a scriptable `Deno.serve`
 * server (HTTPS or plain HTTP) answering `/pods`, and an `openssl s_server`
 * that requires a client certificate (Deno's server cannot ask for one).
 *
 * @module
 */

import { serveLocal } from "../../_support/serve_local.ts";
import { poll } from "../../_support/poll.ts";

/** What the scriptable fake answers. */
export interface FakeKubeletBehaviour {
  /** Required bearer token; 401 without it. */
  token?: string;
  /** HTTP status of `/pods`. @default {200} */
  status?: number;
  /** The body of `/pods`. */
  body?: string | Uint8Array<ArrayBuffer>;
  /** Never answer (until the fake closes). */
  hang?: boolean;
}

/** A running fake kubelet. */
export interface FakeKubelet extends AsyncDisposable {
  /** Base URL, e.g. `https://127.0.0.1:41234`. */
  readonly url: string;
  /** What `/pods` answers; change it between calls. */
  behaviour: FakeKubeletBehaviour;
  /** `authorization` header of every request, in order. */
  readonly authorizations: (string | null)[];
}

/** Options of {@linkcode startFakeKubelet}. */
export interface FakeKubeletOptions {
  /** PEM certificate and key: HTTPS; without them plain HTTP (the read-only port). */
  cert?: string;
  key?: string;
  behaviour?: FakeKubeletBehaviour;
}

/**
 * Starts a fake kubelet on a free port of 127.0.0.1.
 *
 * @param options TLS material and the initial behaviour.
 * @returns The fake; dispose it to stop.
 */
export async function startFakeKubelet(options: FakeKubeletOptions = {}): Promise<FakeKubelet> {
  const authorizations: (string | null)[] = [];
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => release = resolve);
  const fake = {
    url: "",
    behaviour: options.behaviour ?? {},
    authorizations,
  } as FakeKubelet & { url: string };
  const handler = async (request: Request): Promise<Response> => {
    const path = new URL(request.url).pathname;
    authorizations.push(request.headers.get("authorization"));
    const b = fake.behaviour;
    if (path !== "/pods") return new Response("404 page not found\n", { status: 404 });
    if (b.token !== undefined && request.headers.get("authorization") !== `Bearer ${b.token}`) {
      return new Response("Unauthorized", { status: 401 });
    }
    if (b.hang) {
      await released;
      return new Response("late", { status: 503 });
    }
    return new Response(b.body ?? '{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]}', {
      status: b.status ?? 200,
      headers: { "content-type": "application/json" },
    });
  };
  const { url, server } = await serveLocal(handler, options);
  fake.url = url;
  fake[Symbol.asyncDispose] = async () => {
    release();
    await server.shutdown();
  };
  return fake;
}

async function freePort(): Promise<number> {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return await Promise.resolve(port);
}

/** A kubelet that requires a client certificate: `openssl s_server -Verify`. */
export interface MtlsKubelet extends AsyncDisposable {
  readonly url: string;
}

/**
 * Serves `body` as `/pods` with `openssl s_server`, requiring a client
 * certificate signed by `caFile`.
 *
 * @param options Serving certificate and key files, the client CA, the body.
 * @returns The server; dispose it to stop.
 */
export async function startMtlsKubelet(options: {
  dir: string;
  certFile: string;
  keyFile: string;
  caFile: string;
  body: string;
}): Promise<MtlsKubelet> {
  const www = await Deno.makeTempDir({ dir: options.dir, prefix: "www-" });
  await Deno.writeTextFile(`${www}/pods`, options.body);
  const port = await freePort();
  const child = new Deno.Command("openssl", {
    args: [
      "s_server",
      "-accept",
      `127.0.0.1:${port}`,
      "-cert",
      options.certFile,
      "-key",
      options.keyFile,
      "-CAfile",
      options.caFile,
      "-Verify",
      "1",
      "-verify_return_error",
      "-WWW",
      "-quiet",
    ],
    cwd: www,
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  // Wait until it accepts connections.
  try {
    await poll(async () => {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port }).catch(() => undefined);
      conn?.close();
      return conn === undefined ? undefined : true;
    }, { what: `the fake kubelet on port ${port}` });
  } catch (error) {
    child.kill();
    await child.status;
    throw error;
  }
  return {
    url: `https://127.0.0.1:${port}`,
    [Symbol.asyncDispose]: async () => {
      child.kill("SIGTERM");
      await child.status;
    },
  };
}
