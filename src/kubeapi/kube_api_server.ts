/**
 * The Kubernetes-compatible HTTP surface (DESIGN.md §15), read only, on the
 * daemon's own HTTP/1.1 server (bounded connections, Go's deadlines): the kubelet's `/pods`, the API server's pod paths with
 * selectors, paging, resourceVersion and watch (with bookmarks), discovery
 * and `Table` output, so that kubectl and client libraries work unchanged.
 * Served from the query engine; admitted by the serving core as the gRPC
 * services are (rate limits, sync gate, shutdown, the shared watch slots);
 * optional bearer token, always over TLS (given, or self-signed and kept in a
 * directory) when a token is set.
 *
 * @module
 */

import type { CachedPod } from "../cache/types.ts";
import {
  type Http1Timeouts,
  type RequestInfo,
  serveHttp1,
  streamingResponse,
} from "../http1/mod.ts";
import { listenerCounts } from "../metrics/listener_counts.ts";
import type { Logger } from "../log.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { JsonObject } from "../model/json.ts";
import {
  compileSelector,
  type PodSelector,
  ResumeTokenError,
  SELECT_ALL,
  SelectorError,
  TOKEN_TOO_OLD,
  WatchDroppedError,
  type WatchItem,
} from "../query/mod.ts";
import { Refusal, type ServedWatch, type ServingCore } from "../serving/mod.ts";
import { ensureServingCert } from "../tls/mod.ts";
import { BUILD_VERSION } from "../version.ts";
import {
  API_GROUP_LIST,
  apiVersions,
  CORE_V1_RESOURCES,
  type IncludeObject,
  podItemJson,
  podObjectJson,
  podTableJson,
  type StatusCodeHttp,
  statusObject,
  versionInfo,
} from "./api_objects.ts";

/** Options of {@linkcode serveKubeApi}. */
export interface KubeApiServerOptions {
  hostname: string;
  /** 0 picks a free port. */
  port: number;
  /** File with the bearer token clients must send; empty: no authentication. */
  tokenFile?: string;
  /** PEM certificate and key for HTTPS; both or neither. */
  tlsCertFile?: string;
  tlsKeyFile?: string;
  /**
   * With a token and no certificate: the directory of the self-signed
   * serving certificate (kept there; made when missing). A bearer token is
   * never taken over plain HTTP: kubectl would not send it.
   */
  certDir?: string;
  /** Names and addresses the self-signed certificate names besides the bind host and loopback. */
  certHosts?: readonly string[];
  /** Idle time after which a watch with `allowWatchBookmarks` gets a BOOKMARK, ms. */
  bookmarkPeriodMs: number;
  /** Connections held open at once (each watch holds one). */
  maxConnections: number;
  /** Handshake, header, idle and write deadlines. */
  timeouts: Http1Timeouts;
}

/** What {@linkcode serveKubeApi} reads. */
export interface KubeApiServerDeps {
  /** Admission, watch slots, the query engine and the clock, shared with the gRPC services. */
  core: ServingCore;
  metrics: Metrics;
  log: Logger;
}

/** A running HTTP surface. */
export interface RunningKubeApi extends AsyncDisposable {
  readonly port: number;
  /** `http` or `https`. */
  readonly scheme: string;
  close(): Promise<void>;
}

const ENCODER = new TextEncoder();
const JSON_TYPE = "application/json";
/** Seconds a client refused for load is told to wait (`Retry-After`), as the API server says. */
const RETRY_AFTER_SECONDS = 1;

type Verb = "list" | "get" | "watch" | "discovery" | "other";

interface Route {
  readonly kind:
    | "pods"
    | "list"
    | "get"
    | "api"
    | "apis"
    | "core"
    | "version"
    | "namespaces"
    | "namespace";
  readonly namespace?: string;
  readonly name?: string;
}

const NAME_SEGMENT = /^[^/]+$/;

function route(pathname: string): Route | undefined {
  const path = pathname.length > 1 ? pathname.replace(/\/+$/, "") : pathname;
  switch (path) {
    case "/pods":
      return { kind: "pods" };
    case "/api":
      return { kind: "api" };
    case "/apis":
      return { kind: "apis" };
    case "/api/v1":
      return { kind: "core" };
    case "/version":
      return { kind: "version" };
    case "/api/v1/pods":
      return { kind: "list" };
    case "/api/v1/namespaces":
      return { kind: "namespaces" };
  }
  const parts = path.split("/");
  // ["", "api", "v1", "namespaces", ns]: kubectl checks the namespace of a pod it did not find.
  if (
    parts.length === 5 && parts[1] === "api" && parts[2] === "v1" && parts[3] === "namespaces"
  ) {
    return { kind: "namespace", name: decodeURIComponent(parts[4]!) };
  }
  // ["", "api", "v1", "namespaces", ns, "pods", name?]
  if (
    (parts.length === 6 || parts.length === 7) && parts[1] === "api" && parts[2] === "v1" &&
    parts[3] === "namespaces" && parts[5] === "pods" && NAME_SEGMENT.test(parts[4]!)
  ) {
    const namespace = decodeURIComponent(parts[4]!);
    if (parts.length === 6) return { kind: "list", namespace };
    return { kind: "get", namespace, name: decodeURIComponent(parts[6]!) };
  }
  return undefined;
}

function json(body: string | JsonObject, status = 200, headers: HeadersInit = {}): Response {
  return new Response(typeof body === "string" ? body : JSON.stringify(body), {
    status,
    headers: { "content-type": JSON_TYPE, ...headers },
  });
}

function failure(
  code: StatusCodeHttp,
  message: string,
  details?: { name: string; kind: string },
): Response {
  if (code === 429) {
    return json(
      statusObject(code, message, { retryAfterSeconds: RETRY_AFTER_SECONDS }),
      code,
      { "retry-after": String(RETRY_AFTER_SECONDS) },
    );
  }
  const headers: HeadersInit = code === 401
    ? { "www-authenticate": 'Bearer realm="pods-api"' }
    : {};
  return json(statusObject(code, message, details), code, headers);
}

/** The serving core's refusal as the API server words it: 429 for load, 503 while not serving. */
function refused(refusal: Refusal): Response {
  switch (refusal.reason) {
    case "rate_limited":
    case "too_many_watchers":
      return failure(429, refusal.message);
    case "not_synced":
    case "shutting_down":
      return failure(503, refusal.message);
  }
}

/** The key of a client's connection: a TCP connection is its remote address and port. */
function connectionOf(info: RequestInfo): string {
  const addr = info.remoteAddr;
  return `${addr.hostname}:${addr.port}`;
}

/** Which `Table` version the client asked for, if any. */
function tableVersion(accept: string | null): "v1" | "v1beta1" | undefined {
  if (accept === null) return undefined;
  for (const part of accept.split(",")) {
    const params = new Map<string, string>();
    for (const p of part.split(";").slice(1)) {
      const [k, v] = p.split("=");
      if (k !== undefined && v !== undefined) params.set(k.trim(), v.trim());
    }
    if (params.get("as") === "Table" && params.get("g") === "meta.k8s.io") {
      const v = params.get("v");
      if (v === "v1" || v === "v1beta1") return v;
    }
  }
  return undefined;
}

/** A boolean query parameter as Go's `strconv.ParseBool` reads it (python sends `True`). */
function parseBool(value: string | null): boolean {
  return value !== null && ["1", "t", "T", "true", "TRUE", "True"].includes(value);
}

function includeObject(value: string | null): IncludeObject {
  return value === "None" || value === "Object" ? value : "Metadata";
}

function sameSecret(a: string, b: string): boolean {
  const x = ENCODER.encode(a);
  const y = ENCODER.encode(b);
  let diff = x.length ^ y.length;
  for (let i = 0; i < Math.max(x.length, y.length); i++) diff |= (x[i] ?? 0) ^ (y[i] ?? 0);
  return diff === 0;
}

function byNamespaceName(a: CachedPod, b: CachedPod): number {
  const ka = `${a.pod.metadata.namespace}/${a.pod.metadata.name}`;
  const kb = `${b.pod.metadata.namespace}/${b.pod.metadata.name}`;
  return ka < kb ? -1 : ka > kb ? 1 : a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0;
}

interface ContinueToken {
  /** The last `namespace/name` (and UID) already sent. */
  readonly after: string;
}

function encodeContinue(pod: CachedPod): string {
  const after = `${pod.pod.metadata.namespace}/${pod.pod.metadata.name}/${pod.uid}`;
  return btoa(JSON.stringify({ v: 1, after })).replace(/=+$/, "");
}

function decodeContinue(text: string): ContinueToken | undefined {
  try {
    const value = JSON.parse(atob(text)) as { v?: unknown; after?: unknown };
    return value.v === 1 && typeof value.after === "string" ? { after: value.after } : undefined;
  } catch {
    return undefined;
  }
}

function keyOf(pod: CachedPod): string {
  return `${pod.pod.metadata.namespace}/${pod.pod.metadata.name}/${pod.uid}`;
}

/**
 * Starts the HTTP surface.
 *
 * @param options Address, token file, TLS files and bookmark period.
 * @param deps Query engine, gate, limiters, metrics, log and shutdown signal.
 * @returns The running server.
 * @throws {Error} When the address cannot be bound or a file cannot be read.
 */
export async function serveKubeApi(
  options: KubeApiServerOptions,
  deps: KubeApiServerDeps,
): Promise<RunningKubeApi> {
  const token = options.tokenFile ? (await Deno.readTextFile(options.tokenFile)).trim() : "";
  if (options.tokenFile && token === "") {
    throw new TypeError(`Cannot use token file "${options.tokenFile}": it is empty`);
  }
  const tls = options.tlsCertFile && options.tlsKeyFile
    ? {
      cert: await Deno.readTextFile(options.tlsCertFile),
      key: await Deno.readTextFile(options.tlsKeyFile),
    }
    : token === ""
    ? undefined
    : await selfSignedTls(options, deps);
  const scheme = tls === undefined ? "http" : "https";
  const handler = new KubeApiHandler(options, deps, token);
  const server = serveHttp1({
    hostname: options.hostname,
    port: options.port,
    ...(tls === undefined ? {} : { tls }),
    name: "http-api",
    maxConnections: options.maxConnections,
    timeouts: options.timeouts,
    observer: listenerCounts(deps.metrics, "http_api"),
    log: deps.log,
    // I/O deadlines run on real time whatever clock drives the pods (tests advance that one).
    onError: (err) => {
      deps.log.error("http api request failed", { error: err });
      return failure(500, "internal error");
    },
  }, (request, info) => handler.handle(request, info));
  const addr = server.addr;
  handler.serverAddress = `${addr.hostname}:${addr.port}`;
  const close = (): Promise<void> => server.close();
  return { port: addr.port, scheme, close, [Symbol.asyncDispose]: close };
}

/** The kept (or newly made) self-signed serving certificate, for a token without a certificate. */
async function selfSignedTls(
  options: KubeApiServerOptions,
  deps: KubeApiServerDeps,
): Promise<{ cert: string; key: string }> {
  if (!options.certDir) {
    throw new TypeError(
      "A bearer token needs HTTPS (kubectl sends none over plain HTTP): give --http-tls-cert-file or --http-cert-dir",
    );
  }
  let kept;
  try {
    kept = await ensureServingCert({
      dir: options.certDir,
      hosts: [options.hostname, ...(options.certHosts ?? [])],
      // Clients check validity against the wall clock, whatever clock the daemon is given.
      now: Date.now(),
    });
  } catch (err) {
    throw new Error(
      `Cannot keep the HTTP API's serving certificate in --http-cert-dir "${options.certDir}": ${
        (err as Error).message
      }`,
      { cause: err },
    );
  }
  if (kept.made !== undefined) {
    deps.log.info(
      "made a self-signed serving certificate; kubeconfigs made before must be made again",
      {
        reason: kept.made,
        ca: kept.caFile,
      },
    );
  }
  return { cert: kept.cert, key: kept.key };
}

/** Routing, authentication, admission and the handlers of the surface. */
class KubeApiHandler {
  serverAddress = "";
  #o: KubeApiServerOptions;
  #d: KubeApiServerDeps;
  #core: ServingCore;
  #token: string;
  /** Sorted-by-name copies of selections, per selection array. */
  #sorted = new WeakMap<readonly CachedPod[], readonly CachedPod[]>();

  constructor(options: KubeApiServerOptions, deps: KubeApiServerDeps, token: string) {
    this.#o = options;
    this.#d = deps;
    this.#core = deps.core;
    this.#token = token;
  }

  handle(request: Request, info: RequestInfo): Response | Promise<Response> {
    const url = new URL(request.url);
    const r = route(url.pathname);
    const verb: Verb = r === undefined
      ? "other"
      : r.kind === "get"
      ? "get"
      : r.kind === "list" || r.kind === "pods"
      ? (parseBool(url.searchParams.get("watch")) ? "watch" : "list")
      : "discovery";
    const response = this.#route(request, info, url, r, verb);
    const count = (res: Response) => {
      this.#d.metrics.httpRequests.inc({ verb, code: String(res.status) });
      return res;
    };
    return response instanceof Promise ? response.then(count) : count(response);
  }

  #route(
    request: Request,
    info: RequestInfo,
    url: URL,
    r: Route | undefined,
    verb: Verb,
  ): Response | Promise<Response> {
    if (this.#token !== "") {
      const auth = request.headers.get("authorization") ?? "";
      const match = /^Bearer\s+(.+)$/i.exec(auth);
      if (match === null || !sameSecret(match[1]!.trim(), this.#token)) {
        return failure(401, "Unauthorized");
      }
    }
    if (r === undefined) {
      return failure(404, "the server could not find the requested resource");
    }
    if (request.method !== "GET" && request.method !== "HEAD") {
      return failure(
        405,
        `the server does not allow this method on the requested resource (${request.method} ${url.pathname})`,
      );
    }
    switch (r.kind) {
      case "api":
        return json(apiVersions(this.serverAddress));
      case "apis":
        return json(API_GROUP_LIST);
      case "core":
        return json(CORE_V1_RESOURCES);
      case "version":
        return json(versionInfo(`v1.36.0-pods-api+${BUILD_VERSION}`));
    }
    if (r.kind === "namespaces" || r.kind === "namespace") return this.#namespaces(r.name);
    try {
      if (verb === "watch") this.#core.checkServing("http");
      else this.#core.admit("http", verb === "get" ? "get" : "list", connectionOf(info));
    } catch (err) {
      if (err instanceof Refusal) return refused(err);
      throw err;
    }
    let selector: PodSelector;
    try {
      selector = compileSelector({
        namespace: r.namespace ?? "",
        labelSelector: url.searchParams.get("labelSelector") ?? "",
        fieldSelector: url.searchParams.get("fieldSelector") ?? "",
      });
    } catch (err) {
      if (err instanceof SelectorError) return failure(400, err.message);
      throw err;
    }
    const table = tableVersion(request.headers.get("accept"));
    if (r.kind === "get") return this.#get(r.namespace!, r.name!, url, table);
    if (verb === "watch") return this.#watch(info, url, selector, table);
    return this.#list(url, selector, table, r.kind === "pods");
  }

  /** Namespaces as far as the node knows them: those its pods live in. */
  #namespaces(name: string | undefined): Response {
    const names = new Set<string>();
    for (const pod of this.#core.engine.list(SELECT_ALL)) names.add(pod.pod.metadata.namespace);
    const object = (ns: string) => ({
      metadata: { name: ns },
      spec: { finalizers: ["kubernetes"] },
      status: { phase: "Active" },
    });
    if (name === undefined) {
      return json({
        kind: "NamespaceList",
        apiVersion: "v1",
        metadata: { resourceVersion: this.#core.engine.token(this.#core.engine.position) },
        items: [...names].sort().map(object),
      });
    }
    if (!names.has(name)) {
      return failure(404, `namespaces "${name}" not found`, { name, kind: "namespaces" });
    }
    return json({ kind: "Namespace", apiVersion: "v1", ...object(name) });
  }

  #get(
    namespace: string,
    name: string,
    url: URL,
    table: "v1" | "v1beta1" | undefined,
  ): Response {
    const found = this.#core.engine.lookup({ kind: "name", namespace, name });
    if (found === undefined) {
      return failure(404, `pods "${name}" not found`, { name, kind: "pods" });
    }
    const pod = found.pod;
    const rv = this.#core.engine.token(pod.version);
    if (table !== undefined) {
      return json(
        podTableJson([{ pod, resourceVersion: rv }], {
          metadata: { resourceVersion: rv },
          include: includeObject(url.searchParams.get("includeObject")),
          now: this.#core.clock.now(),
          columns: true,
        }).replace('"meta.k8s.io/v1"', `"meta.k8s.io/${table}"`),
      );
    }
    return json(podObjectJson(podItemJson(pod, rv, true)));
  }

  #list(
    url: URL,
    selector: PodSelector,
    table: "v1" | "v1beta1" | undefined,
    kubelet: boolean,
  ): Response {
    const engine = this.#core.engine;
    const position = engine.position;
    const listRv = engine.token(position);
    const selected = engine.list(selector);
    let pods = this.#sorted.get(selected);
    if (pods === undefined) {
      pods = [...selected].sort(byNamespaceName);
      this.#sorted.set(selected, pods);
    }
    const metadata: JsonObject = kubelet ? {} : { resourceVersion: listRv };
    const limitText = url.searchParams.get("limit");
    const continueText = url.searchParams.get("continue");
    let start = 0;
    if (continueText !== null && continueText !== "") {
      const token = decodeContinue(continueText);
      if (token === undefined) return failure(400, "Cannot use continue token: malformed");
      let lo = 0;
      let hi = pods.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (keyOf(pods[mid]!) <= token.after) lo = mid + 1;
        else hi = mid;
      }
      start = lo;
    }
    let end = pods.length;
    if (limitText !== null && limitText !== "" && limitText !== "0") {
      const limit = Number(limitText);
      if (!Number.isInteger(limit) || limit < 0) {
        return failure(400, `Cannot use limit "${limitText}": not a non-negative integer`);
      }
      end = Math.min(pods.length, start + limit);
    }
    const page = start === 0 && end === pods.length ? pods : pods.slice(start, end);
    if (end < pods.length) {
      metadata.continue = encodeContinue(pods[end - 1]!);
      metadata.remainingItemCount = pods.length - end;
    }
    if (table !== undefined) {
      const rows = page.map((pod) => ({ pod, resourceVersion: engine.token(pod.version) }));
      return json(
        podTableJson(rows, {
          metadata,
          include: includeObject(url.searchParams.get("includeObject")),
          now: this.#core.clock.now(),
          columns: true,
        }).replace('"meta.k8s.io/v1"', `"meta.k8s.io/${table}"`),
      );
    }
    const items = page.map((pod) => podItemJson(pod, engine.token(pod.version), true));
    return json(
      `{"kind":"PodList","apiVersion":"v1","metadata":${JSON.stringify(metadata)},"items":[${
        items.join(",")
      }]}`,
    );
  }

  #watch(
    info: RequestInfo,
    url: URL,
    selector: PodSelector,
    table: "v1" | "v1beta1" | undefined,
  ): Response {
    const params = url.searchParams;
    const rv = params.get("resourceVersion") ?? "";
    const bookmarks = parseBool(params.get("allowWatchBookmarks"));
    const initialEventsEnd = bookmarks && parseBool(params.get("sendInitialEvents"));
    const timeoutText = params.get("timeoutSeconds");
    const timeoutSeconds = timeoutText === null ? 0 : Number(timeoutText);
    // The client's end is the response's: its body cancelled or the response
    // over (`info.completed`). `request.signal` is not used: Deno warns that
    // it also aborts after a response sent in full (its legacy behaviour).
    const done = new AbortController();
    const signals = [done.signal];
    if (Number.isFinite(timeoutSeconds) && timeoutSeconds > 0) {
      signals.push(AbortSignal.timeout(timeoutSeconds * 1000));
    }
    const signal = signals.length === 1 ? done.signal : AbortSignal.any(signals);
    const engine = this.#core.engine;
    const include = includeObject(params.get("includeObject"));
    const clock = this.#core.clock;
    const line = (type: string, object: string) =>
      ENCODER.encode(`{"type":"${type}","object":${object}}\n`);
    let watch: ServedWatch;
    try {
      watch = this.#core.openWatch({
        surface: "http",
        selector,
        resumeToken: rv === "0" ? "" : rv,
        bookmarkMs: bookmarks ? this.#o.bookmarkPeriodMs : 0,
        signal,
      });
    } catch (err) {
      if (err instanceof Refusal) return refused(err);
      if (!(err instanceof ResumeTokenError)) throw err;
      // As the API server: the stream opens, says 410 Gone once, and ends.
      const message = err.problem === "expired" ? TOKEN_TOO_OLD : `${err.message}; list again`;
      return new Response(
        line("ERROR", JSON.stringify(statusObject(410, message))),
        { headers: { "content-type": JSON_TYPE } },
      );
    }
    const end = () => {
      done.abort();
      watch.close();
    };
    // However the response ends (sent, client gone, server closed), the slot is given back.
    info.completed.then(end, end);
    const render = (item: WatchItem): Uint8Array | undefined => {
      if (item.type === "INITIAL_SYNC_COMPLETE") {
        if (!initialEventsEnd) return undefined;
        return line(
          "BOOKMARK",
          JSON.stringify({
            kind: "Pod",
            apiVersion: "v1",
            metadata: {
              resourceVersion: engine.token(item.position),
              annotations: { "k8s.io/initial-events-end": "true" },
            },
          }),
        );
      }
      if (item.type === "BOOKMARK") {
        return line(
          "BOOKMARK",
          JSON.stringify({
            kind: "Pod",
            apiVersion: "v1",
            metadata: { resourceVersion: engine.token(item.position) },
          }),
        );
      }
      const pod = item.pod!;
      // Initial ADDED items carry the watch's start: a client that resumes
      // after the initial list gets exactly the changes since.
      const position = item.position === 0 ? watch.position : item.position;
      const token = engine.token(position);
      if (table !== undefined) {
        const object = podTableJson([{ pod, resourceVersion: token }], {
          metadata: { resourceVersion: token },
          include,
          now: clock.now(),
          columns: true,
        }).replace('"meta.k8s.io/v1"', `"meta.k8s.io/${table}"`);
        return line(item.type, object);
      }
      return line(item.type, podObjectJson(podItemJson(pod, token, position === pod.version)));
    };
    const log = this.#d.log;
    const items = watch[Symbol.asyncIterator]();
    /** The line that ends a failed stream, as the API server sends it. */
    const failed = (err: unknown): Uint8Array => {
      if (err instanceof WatchDroppedError) {
        return line("ERROR", JSON.stringify(statusObject(410, `${err.message}; watch again`)));
      }
      log.error("http watch failed", { error: err });
      return line("ERROR", JSON.stringify(statusObject(500, "internal error")));
    };
    const body = new ReadableStream<Uint8Array>({
      // One line per pull: the client's reading paces the watch (its queue drops it if too slow).
      async pull(controller) {
        try {
          for (;;) {
            const next = await items.next();
            // Cancelled meanwhile: the stream is gone, nothing more to write.
            if (done.signal.aborted) return;
            if (next.done) break;
            const frame = render(next.value);
            if (frame !== undefined) return controller.enqueue(frame);
          }
        } catch (err) {
          if (done.signal.aborted) return;
          controller.enqueue(failed(err));
        }
        end();
        controller.close();
      },
      // The client left: its subscription ends and the slot is free at once.
      cancel: end,
    }, { highWaterMark: 0 });
    return streamingResponse(
      new Response(body, {
        headers: { "content-type": JSON_TYPE, "cache-control": "no-cache" },
      }),
    );
  }
}
