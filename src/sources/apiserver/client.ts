/**
 * A Kubernetes API client for the one thing this daemon asks of the API
 * server: GET of the pods resource (list and watch), over Deno's `fetch`
 * (HTTP/2 or HTTP/1.1, whichever TLS negotiates), with a bearer token read
 * at every request (a projected token rotates), a CA bundle and a client
 * certificate (`Deno.createHttpClient`, rebuilt when a file changes).
 *
 * Every failure is an {@linkcode ApiServerError} that names the server and
 * the cause: 401 (credentials refused), 403 (with the RBAC verb that is
 * missing), 410 (too old: list again), 429 and 5xx (with `Retry-After`), TLS,
 * DNS, refused connections, timeouts.
 *
 * @module
 */

import { SourceUnavailableError } from "../mod.ts";
import { BUILD_VERSION } from "../../version.ts";
import {
  BodyTooLargeError,
  fetchErrorText,
  fetchFailure,
  HttpClientCache,
  readBody,
} from "../https.ts";
import { isJsonObject } from "../../model/json.ts";
import type { ApiServerConnection, PemSource } from "./connection.ts";

/** Why a request to the API server failed: the `cause` label of the error metrics. */
export type ApiServerFailure =
  | "http_401"
  | "http_403"
  | "http_404"
  | "http_410"
  | "http_429"
  | "http_4xx"
  | "http_5xx"
  | "http_other"
  | "tls"
  | "dns"
  | "connect"
  | "timeout"
  | "invalid_json"
  | "too_large"
  | "credentials";

/** The verbs this daemon needs on pods (the RBAC it must be granted). */
export type PodVerb = "list" | "watch";

/** A failed request to the API server. */
export class ApiServerError extends SourceUnavailableError {
  /** The HTTP status, when the server answered. */
  readonly status: number | undefined;
  /** How long the server asked us to wait (`Retry-After`), ms. */
  readonly retryAfterMs: number | undefined;
  /** The cause, as {@linkcode ApiServerError.reason} (typed). */
  readonly failure: ApiServerFailure;

  /**
   * @param message The whole sentence: server, what was asked, why.
   * @param options Cause, status, `Retry-After` and the underlying error.
   */
  constructor(
    message: string,
    options: {
      failure: ApiServerFailure;
      status?: number;
      retryAfterMs?: number;
      cause?: unknown;
    },
  ) {
    super(message, { reason: options.failure, cause: options.cause });
    this.name = "ApiServerError";
    this.failure = options.failure;
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** Options of {@linkcode ApiServerClient}. */
export interface ApiServerClientOptions {
  /** Reads token, CA, certificate and key files. @default {Deno.readFile} */
  readFile?: (path: string) => Promise<Uint8Array>;
  /** Now in ms, to read a `Retry-After` date. @default {Date.now} */
  now?: () => number;
  /** Largest list page accepted, bytes. @default {64 MiB} */
  maxBodyBytes?: number;
}

/** Longest `Retry-After` honoured, ms: a server asking for more gets this. */
const MAX_RETRY_AFTER_MS = 5 * 60_000;
const DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024;
/** Bytes of an error body read for its `Status` message. */
const MAX_ERROR_BODY = 64 * 1024;
const DECODER = new TextDecoder("utf-8", { fatal: true });

/**
 * Reads a `Retry-After` header: seconds, or an HTTP date.
 *
 * @example Usage
 * ```ts
 * import { parseRetryAfter } from "./client.ts";
 * parseRetryAfter("3", 0); // 3000
 * ```
 *
 * @param value The header, or `null`.
 * @param now Now in ms (for a date).
 * @returns The wait in ms (capped at 5 minutes), or `undefined` when absent or unreadable.
 */
export function parseRetryAfter(value: string | null, now: number): number | undefined {
  if (value === null || value.trim() === "") return undefined;
  const text = value.trim();
  let ms: number;
  if (/^\d+$/.test(text)) ms = Number(text) * 1000;
  else {
    const at = Date.parse(text);
    if (Number.isNaN(at)) return undefined;
    ms = Math.max(0, at - now);
  }
  return Math.min(ms, MAX_RETRY_AFTER_MS);
}

function failureOfStatus(status: number): ApiServerFailure {
  switch (status) {
    case 401:
      return "http_401";
    case 403:
      return "http_403";
    case 404:
      return "http_404";
    case 410:
      return "http_410";
    case 429:
      return "http_429";
  }
  if (status >= 500 && status < 600) return "http_5xx";
  return status >= 400 && status < 500 ? "http_4xx" : "http_other";
}

/**
 * Explains an HTTP failure status the way an operator needs it.
 *
 * @param status The status.
 * @param verb What was asked.
 * @param origin Where the credentials came from.
 * @returns A clause to append, or `""`.
 */
function advice(status: number, verb: PodVerb, origin: string): string {
  if (status === 401) {
    return `: the API server did not accept the credentials from ${origin} (expired or wrong token, or a client certificate it does not trust)`;
  }
  if (status === 403) {
    return `: the identity lacks RBAC verb "${verb}" on "pods" at cluster scope (grant get, list, watch on pods: deploy/components/apiserver-source)`;
  }
  if (status === 429) return ": the API server is shedding load";
  return "";
}

function statusMessage(body: Uint8Array): string | undefined {
  try {
    const doc: unknown = JSON.parse(DECODER.decode(body));
    if (isJsonObject(doc) && typeof doc.message === "string" && doc.message !== "") {
      return doc.message;
    }
  } catch {
    // Not a Status: the code says enough.
  }
  return undefined;
}

/**
 * GETs pod lists and watches from one API server.
 *
 * @example Usage
 * ```ts ignore
 * import { ApiServerClient } from "./client.ts";
 * import { inClusterConnection } from "./connection.ts";
 * using client = new ApiServerClient(inClusterConnection());
 * const res = await client.get("/api/v1/pods?limit=1", "list", AbortSignal.timeout(10_000));
 * ```
 */
export class ApiServerClient implements Disposable {
  readonly #connection: ApiServerConnection;
  readonly #readFile: (path: string) => Promise<Uint8Array>;
  readonly #now: () => number;
  readonly #maxBodyBytes: number;
  readonly #clients = new HttpClientCache();
  readonly #https: boolean;

  /**
   * @param connection Server and credentials.
   * @param options File reader, clock and limits.
   * @throws {TypeError} When the server is not an http(s) URL.
   */
  constructor(connection: ApiServerConnection, options: ApiServerClientOptions = {}) {
    let url: URL;
    try {
      url = new URL(connection.server);
    } catch {
      throw new TypeError(`Cannot use API server "${connection.server}": it is not a URL`);
    }
    if (url.protocol !== "https:" && url.protocol !== "http:") {
      throw new TypeError(
        `Cannot use API server "${connection.server}": the scheme must be https (or http)`,
      );
    }
    this.#connection = { ...connection, server: connection.server.replace(/\/+$/, "") };
    this.#https = url.protocol === "https:";
    this.#readFile = options.readFile ?? ((path) => Deno.readFile(path));
    this.#now = options.now ?? Date.now;
    this.#maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  }

  /** The server's base URL. */
  get server(): string {
    return this.#connection.server;
  }

  /** Where the credentials came from ("in-cluster", a kubeconfig). */
  get origin(): string {
    return this.#connection.origin;
  }

  /**
   * GETs a path and returns the response when it is 2xx.
   *
   * @param path Path and query, from `/`.
   * @param verb What this request is, for messages (the RBAC verb it needs).
   * @param signal Abandons the request; its reason is thrown when it aborts.
   * @returns The response; its body is the caller's to read or cancel.
   * @throws {ApiServerError} For every failure but the caller's abort.
   */
  async get(path: string, verb: PodVerb, signal: AbortSignal): Promise<Response> {
    const url = `${this.#connection.server}${path}`;
    const fail = (failure: ApiServerFailure, why: string, extra: Partial<ApiServerError> = {}) =>
      new ApiServerError(`Cannot ${verb} pods at ${this.#connection.server}: ${why}`, {
        failure,
        ...(extra.status !== undefined ? { status: extra.status } : {}),
        ...(extra.retryAfterMs !== undefined ? { retryAfterMs: extra.retryAfterMs } : {}),
        ...(extra.cause !== undefined ? { cause: extra.cause } : {}),
      });
    const headers: Record<string, string> = {
      accept: "application/json",
      "user-agent": `pods-api/${BUILD_VERSION}`,
    };
    const token = await this.#token(fail);
    if (token !== undefined) headers.authorization = `Bearer ${token}`;
    const client = await this.#client(fail);
    let response: Response;
    try {
      const init: RequestInit & { client?: Deno.HttpClient } = { headers, signal };
      if (client !== undefined) init.client = client;
      response = await fetch(url, init);
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      const failure = fetchFailure(error);
      const host = new URL(url).hostname;
      const why = failure === "dns"
        ? `DNS lookup of "${host}" failed (${fetchErrorText(error)})`
        : failure === "tls"
        ? `TLS failure (${fetchErrorText(error)}); check the CA from ${this.#connection.origin}`
        : `cannot connect (${fetchErrorText(error)})`;
      throw fail(failure, why, { cause: error });
    }
    if (response.ok) return response;
    let message: string | undefined;
    try {
      message = statusMessage(await readBody(response, MAX_ERROR_BODY));
    } catch {
      message = undefined;
    }
    const status = response.status;
    const retryAfterMs = parseRetryAfter(response.headers.get("retry-after"), this.#now());
    const text = `HTTP ${status}${message === undefined ? "" : ` (${message})`}${
      advice(status, verb, this.#connection.origin)
    }`;
    throw fail(failureOfStatus(status), text, {
      status,
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    });
  }

  /**
   * GETs a path and parses its JSON body.
   *
   * @param path Path and query, from `/`.
   * @param verb What this request is, for messages.
   * @param signal Abandons the request.
   * @returns The parsed body.
   * @throws {ApiServerError} For every failure but the caller's abort.
   */
  async getJson(path: string, verb: PodVerb, signal: AbortSignal): Promise<unknown> {
    const response = await this.get(path, verb, signal);
    let body: Uint8Array;
    try {
      body = await readBody(response, this.#maxBodyBytes);
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      if (error instanceof BodyTooLargeError) {
        throw new ApiServerError(
          `Cannot ${verb} pods at ${this.#connection.server}: ${error.message}`,
          { failure: "too_large" },
        );
      }
      throw new ApiServerError(
        `Cannot ${verb} pods at ${this.#connection.server}: the answer broke off (${
          fetchErrorText(error)
        })`,
        { failure: "connect", cause: error },
      );
    }
    try {
      return JSON.parse(DECODER.decode(body));
    } catch (error) {
      throw new ApiServerError(
        `Cannot ${verb} pods at ${this.#connection.server}: the answer is not JSON (${
          fetchErrorText(error)
        })`,
        { failure: "invalid_json", cause: error },
      );
    }
  }

  /** Releases the HTTP client. */
  close(): void {
    this.#clients.close();
  }

  /** Same as {@linkcode ApiServerClient.close}. */
  [Symbol.dispose](): void {
    this.close();
  }

  async #read(
    source: PemSource | undefined,
    what: string,
    fail: (failure: ApiServerFailure, why: string, extra?: { cause?: unknown }) => ApiServerError,
  ): Promise<string | undefined> {
    if (source === undefined) return undefined;
    if ("pem" in source) return source.pem;
    try {
      return DECODER.decode(await this.#readFile(source.file));
    } catch (error) {
      throw fail(
        "credentials",
        `cannot read ${what} "${source.file}" (${fetchErrorText(error)})`,
        { cause: error },
      );
    }
  }

  async #token(
    fail: (failure: ApiServerFailure, why: string, extra?: { cause?: unknown }) => ApiServerError,
  ): Promise<string | undefined> {
    const source = this.#connection.token;
    if (source === undefined) return undefined;
    const token = "token" in source
      ? source.token
      : (await this.#read({ file: source.file }, "token file", fail))!.trim();
    if (token === "") {
      throw fail(
        "credentials",
        `the token ${"file" in source ? `file "${source.file}" ` : ""}is empty`,
      );
    }
    return token;
  }

  async #client(
    fail: (failure: ApiServerFailure, why: string, extra?: { cause?: unknown }) => ApiServerError,
  ): Promise<Deno.HttpClient | undefined> {
    if (!this.#https) return undefined;
    const c = this.#connection;
    const ca = await this.#read(c.ca, "CA file", fail);
    const cert = await this.#read(c.clientCert, "client certificate", fail);
    const key = await this.#read(c.clientKey, "client key", fail);
    try {
      return this.#clients.client({ ca, cert, key });
    } catch (error) {
      throw fail(
        "credentials",
        `cannot use the TLS credentials from ${c.origin} (${fetchErrorText(error)})`,
        { cause: error },
      );
    }
  }
}
