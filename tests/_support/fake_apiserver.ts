/**
 * A small fake Kubernetes API server for the pods resource, for the cases
 * this daemon's own HTTP surface cannot produce: it lists and watches pods
 * with resourceVersions, a field selector on `spec.nodeName`, paging and
 * bookmarks, forgets old versions on demand (410), and answers scripted
 * failures (401, 403, 429 with Retry-After). It counts the requests and the
 * bytes it sends (the API server side of the benchmark).
 *
 * @module
 */

import type { PodObject } from "../../src/model/pod.ts";
import { serveLocal } from "./serve_local.ts";

/** A scripted answer to a request of a verb, or `undefined` to pass it on. */
export type ScriptedAnswer = (verb: SeenRequest["verb"]) => Response | undefined;

/** One request as the fake saw it. */
export interface SeenRequest {
  readonly verb: "list" | "watch" | "other";
  readonly params: URLSearchParams;
  readonly authorization: string | null;
}

/** A running fake. */
export interface FakeApiServer extends AsyncDisposable {
  /** `http://127.0.0.1:PORT` or `https://...`. */
  readonly url: string;
  readonly requests: SeenRequest[];
  /** Body bytes sent, all requests. */
  readonly bytesSent: number;
  /** Watch streams open now. */
  readonly openWatches: number;
  /** The newest resourceVersion. */
  readonly resourceVersion: number;
  /** The bearer token required; `undefined`: none. */
  token: string | undefined;
  /**
   * Answers the next requests instead of the normal handling, first in first
   * out; an entry that returns `undefined` lets that request through and stays.
   */
  readonly script: ScriptedAnswer[];
  /** Creates or updates a pod (ADDED or MODIFIED to watchers). */
  put(pod: PodObject): void;
  /** Deletes a pod (DELETED to watchers). */
  remove(uid: string): void;
  /** Sends a BOOKMARK at the newest version to every open watch. */
  bookmark(): void;
  /** Ends every open watch as the server's timeout does. */
  endWatches(): void;
  /** Forgets every version up to now: watches from older versions get 410. */
  compact(): void;
  /** Resolves once `n` watch streams are open. */
  waitForWatches(n: number): Promise<void>;
  /** Resolves once `n` requests have been seen. */
  waitForRequests(n: number): Promise<void>;
}

/** Options of {@linkcode startFakeApiServer}. */
export interface FakeApiServerOptions {
  /** PEM certificate and key: HTTPS. */
  cert?: string;
  key?: string;
  token?: string;
  /** Pods at start (version 1 each). */
  pods?: PodObject[];
}

interface Stored {
  readonly pod: PodObject;
  readonly rv: number;
}

interface Change {
  readonly type: "ADDED" | "MODIFIED" | "DELETED";
  readonly rv: number;
  readonly pod: PodObject;
}

interface Watcher {
  readonly selector: (pod: PodObject) => boolean;
  send(line: string): void;
  end(): void;
}

const ENCODER = new TextEncoder();

function nodeFilter(params: URLSearchParams): (pod: PodObject) => boolean {
  const selector = params.get("fieldSelector") ?? "";
  const match = /^spec\.nodeName=(.*)$/.exec(selector);
  if (match === null) return () => true;
  const node = match[1];
  return (pod) => (pod.spec as { nodeName?: string } | undefined)?.nodeName === node;
}

function withRv(pod: PodObject, rv: number): PodObject {
  return { ...pod, metadata: { ...pod.metadata, resourceVersion: String(rv) } };
}

function status(code: number, message: string, headers: Record<string, string> = {}): Response {
  return new Response(
    JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", message, code }),
    { status: code, headers: { "content-type": "application/json", ...headers } },
  );
}

/**
 * Starts the fake on a free port of 127.0.0.1.
 *
 * @param options TLS, token and the first pods.
 * @returns The fake; dispose it to stop.
 */
export async function startFakeApiServer(
  options: FakeApiServerOptions = {},
): Promise<FakeApiServer> {
  let rv = 1;
  let compactedAt = 0;
  let bytes = 0;
  const pods = new Map<string, Stored>();
  for (const pod of options.pods ?? []) pods.set(pod.metadata.uid, { pod, rv });
  const changes: Change[] = [];
  const watchers = new Set<Watcher>();
  const requests: SeenRequest[] = [];
  const wakers = new Set<() => void>();
  const wake = () => {
    for (const w of wakers) w();
  };
  const until = (ready: () => boolean) =>
    new Promise<void>((resolve) => {
      const check = () => {
        if (!ready()) return;
        wakers.delete(check);
        resolve();
      };
      wakers.add(check);
      check();
    });
  const count = (text: string) => {
    const data = ENCODER.encode(text);
    bytes += data.length;
    return data;
  };
  const publish = (change: Change) => {
    changes.push(change);
    const line = JSON.stringify({ type: change.type, object: withRv(change.pod, change.rv) });
    for (const w of watchers) if (w.selector(change.pod)) w.send(line);
  };

  const list = (params: URLSearchParams): Response => {
    const selected = [...pods.values()].filter((s) => nodeFilter(params)(s.pod));
    const limit = Number(params.get("limit") ?? "0");
    const offset = Number(params.get("continue") || "0");
    const page = limit > 0 ? selected.slice(offset, offset + limit) : selected;
    const next = limit > 0 && offset + limit < selected.length ? String(offset + limit) : "";
    const metadata: Record<string, string> = { resourceVersion: String(rv) };
    if (next !== "") metadata.continue = next;
    const body = JSON.stringify({
      kind: "PodList",
      apiVersion: "v1",
      metadata,
      items: page.map((s) => withRv(s.pod, s.rv)),
    });
    return new Response(count(body), { headers: { "content-type": "application/json" } });
  };

  const watch = (params: URLSearchParams): Response => {
    const from = params.get("resourceVersion") ?? "";
    const selector = nodeFilter(params);
    const initial: string[] = [];
    if (from === "" || from === "0") {
      for (const s of pods.values()) {
        if (selector(s.pod)) {
          initial.push(JSON.stringify({ type: "ADDED", object: withRv(s.pod, s.rv) }));
        }
      }
    } else if (Number(from) < compactedAt) {
      const gone = {
        type: "ERROR",
        object: {
          kind: "Status",
          apiVersion: "v1",
          status: "Failure",
          message: `too old resource version: ${from} (${compactedAt})`,
          reason: "Expired",
          code: 410,
        },
      };
      return new Response(count(`${JSON.stringify(gone)}\n`), {
        headers: { "content-type": "application/json" },
      });
    } else {
      for (const c of changes) {
        if (c.rv > Number(from) && selector(c.pod)) {
          initial.push(JSON.stringify({ type: c.type, object: withRv(c.pod, c.rv) }));
        }
      }
    }
    let watcher: Watcher;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        let open = true;
        watcher = {
          selector,
          send(line) {
            if (open) controller.enqueue(count(`${line}\n`));
          },
          end() {
            if (!open) return;
            open = false;
            watchers.delete(watcher);
            wake();
            try {
              controller.close();
            } catch {
              // Already cancelled by the client.
            }
          },
        };
        watchers.add(watcher);
        for (const line of initial) watcher.send(line);
        wake();
      },
      cancel() {
        watcher.end();
      },
    });
    return new Response(body, { headers: { "content-type": "application/json" } });
  };

  const handler = (request: Request): Response => {
    const url = new URL(request.url);
    const isPods = url.pathname === "/api/v1/pods";
    const verb = !isPods ? "other" : url.searchParams.get("watch") === "true" ? "watch" : "list";
    requests.push({
      verb,
      params: url.searchParams,
      authorization: request.headers.get("authorization"),
    });
    wake();
    const scripted = fake.script[0]?.(verb);
    if (scripted !== undefined) {
      fake.script.shift();
      return scripted;
    }
    if (
      fake.token !== undefined && request.headers.get("authorization") !== `Bearer ${fake.token}`
    ) {
      return status(401, "Unauthorized");
    }
    if (!isPods) return status(404, "the server could not find the requested resource");
    return verb === "watch" ? watch(url.searchParams) : list(url.searchParams);
  };

  const fake = {
    url: "",
    requests,
    get bytesSent() {
      return bytes;
    },
    get openWatches() {
      return watchers.size;
    },
    get resourceVersion() {
      return rv;
    },
    token: options.token,
    script: [] as ScriptedAnswer[],
    put(pod: PodObject) {
      const type = pods.has(pod.metadata.uid) ? "MODIFIED" : "ADDED";
      rv++;
      pods.set(pod.metadata.uid, { pod, rv });
      publish({ type, rv, pod });
    },
    remove(uid: string) {
      const stored = pods.get(uid);
      if (stored === undefined) return;
      rv++;
      pods.delete(uid);
      publish({ type: "DELETED", rv, pod: stored.pod });
    },
    bookmark() {
      const line = JSON.stringify({
        type: "BOOKMARK",
        object: { kind: "Pod", apiVersion: "v1", metadata: { resourceVersion: String(rv) } },
      });
      for (const w of watchers) w.send(line);
    },
    endWatches() {
      for (const w of [...watchers]) w.end();
    },
    compact() {
      compactedAt = rv;
      changes.length = 0;
    },
    waitForWatches: (n: number) => until(() => watchers.size >= n),
    waitForRequests: (n: number) => until(() => requests.length >= n),
  } as FakeApiServer & { url: string };

  const { url, server } = await serveLocal(handler, options);
  fake.url = url;
  fake[Symbol.asyncDispose] = async () => {
    fake.endWatches();
    await server.shutdown();
  };
  return fake;
}

/** A 403 to requests of `verb`, as the API server words it for a service account missing it. */
export function forbidden(verb: "list" | "watch"): ScriptedAnswer {
  return (seen) =>
    seen !== verb ? undefined : status(
      403,
      `pods is forbidden: User "system:serviceaccount:kube-system:pods-api" cannot ${verb} resource "pods" in API group "" at the cluster scope`,
    );
}

/** A 429 with Retry-After. */
export function tooManyRequests(seconds: number): ScriptedAnswer {
  return () =>
    status(429, "Too many requests, please try again later.", {
      "retry-after": String(seconds),
    });
}

/** A bare status answer with a body that is no `Status`. */
export function plainStatus(code: number): ScriptedAnswer {
  return () => new Response("boom", { status: code });
}
