/**
 * The Kubernetes-compatible HTTP surface (DESIGN.md §15), read only, on the
 * daemon's own HTTP/1.1 server (bounded connections, Go's deadlines): the kubelet's `/pods`, the API server's pod paths with
 * selectors, paging, resourceVersion and watch (with bookmarks), discovery
 * and `Table` output, so that kubectl and client libraries work unchanged.
 * Served from the query engine; admitted by the serving core as the gRPC
 * services are (rate limits, sync gate, shutdown, the shared watch slots);
 * optional bearer token, always over TLS (given, or self-signed and kept in a
 * directory) when a token is set. Lists and their paging are `_pod_list.ts`,
 * the watch stream `_http_watch.ts`.
 *
 * @module
 */

import { type Http1Timeouts, type RequestInfo, serveHttp1 } from "../http1/mod.ts";
import { listenerCounts } from "../metrics/listener_counts.ts";
import type { Logger } from "../log.ts";
import type { Metrics } from "../metrics/metrics.ts";
import { compileSelector, type PodSelector, SELECT_ALL, SelectorError } from "../query/mod.ts";
import { Refusal, type ServingCore } from "../serving/mod.ts";
import { ensureServingCert } from "../tls/mod.ts";
import { BUILD_VERSION } from "../version.ts";
import {
  API_GROUP_LIST,
  apiVersions,
  CORE_V1_RESOURCES,
  podItemJson,
  podObjectJson,
  podTableJson,
  versionInfo,
} from "./api_objects.ts";
import { serveHttpWatch } from "./_http_watch.ts";
import { PodListPages } from "./_pod_list.ts";
import {
  ENCODER,
  failure,
  includeObject,
  json,
  parseBool,
  refused,
  tableVersion,
} from "./_responses.ts";

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

/** The key of a client's connection: a TCP connection is its remote address and port. */
function connectionOf(info: RequestInfo): string {
  const addr = info.remoteAddr;
  return `${addr.hostname}:${addr.port}`;
}

function sameSecret(a: string, b: string): boolean {
  const x = ENCODER.encode(a);
  const y = ENCODER.encode(b);
  let diff = x.length ^ y.length;
  for (let i = 0; i < Math.max(x.length, y.length); i++) diff |= (x[i] ?? 0) ^ (y[i] ?? 0);
  return diff === 0;
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
  #options: KubeApiServerOptions;
  #deps: KubeApiServerDeps;
  #core: ServingCore;
  #token: string;
  #pages: PodListPages;

  constructor(options: KubeApiServerOptions, deps: KubeApiServerDeps, token: string) {
    this.#options = options;
    this.#deps = deps;
    this.#core = deps.core;
    this.#token = token;
    this.#pages = new PodListPages(deps.core);
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
      this.#deps.metrics.httpRequests.inc({ verb, code: String(res.status) });
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
    if (verb === "watch") {
      return serveHttpWatch({ info, url, selector, table }, {
        core: this.#core,
        bookmarkPeriodMs: this.#options.bookmarkPeriodMs,
        log: this.#deps.log,
      });
    }
    return this.#pages.respond(url, selector, table, r.kind === "pods");
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
}
