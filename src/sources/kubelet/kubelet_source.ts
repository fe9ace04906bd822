/**
 * The kubelet pod source: the local kubelet's `/pods` endpoint (a
 * `v1.PodList` in JSON with every pod's full spec), over HTTPS with a bearer
 * token or a client certificate, or over the read-only HTTP port.
 *
 * TLS and Deno: `Deno.createHttpClient()` takes extra CA certificates and a
 * client certificate, but has no way to skip server certificate
 * verification per client. `insecureSkipTlsVerify` therefore cannot be done
 * by this code alone: the process must run with Deno's
 * `--unsafely-ignore-certificate-errors=127.0.0.1` (on `deno run`, or baked
 * in with `deno compile`). Without it the kubelet's self-signed certificate
 * fails with reason `tls`; the better fix is `caFile` pointing at the
 * kubelet's serving certificate or CA (`/var/lib/kubelet/pki/kubelet.crt`
 * holds both when the kubelet made its own).
 *
 * @module
 */

import { systemClock } from "../../clock.ts";
import type { Logger } from "../../log.ts";
import type { Metrics } from "../../metrics/metrics.ts";
import { isJsonObject, type JsonObject } from "../../model/json.ts";
import type { PodSnapshot } from "../../model/pod.ts";
import { type PolledSource, SourceUnavailableError } from "../mod.ts";
import { bytesEqual } from "../../bytes_equal.ts";
import { numericDefault } from "../../config_flags.ts";
import {
  BodyTooLargeError,
  fetchErrorText,
  fetchFailure,
  HttpClientCache,
  readBody,
} from "../https.ts";
import { checkPodItem, jsonEqual } from "../pod_items.ts";
import { sameItems } from "../same_items.ts";

/** The kubelet's authenticated port on the node. */
export const DEFAULT_KUBELET_URL = "https://127.0.0.1:10250";

/** The token a pod's service account gets (the daemon as a DaemonSet). */
export const DEFAULT_TOKEN_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/token";

/** Longest wait for one `/pods` answer, in ms. */
export const DEFAULT_KUBELET_TIMEOUT_MS = 10_000;

/** How often `/pods` is polled by default, in ms (it is a full list of large objects). */
export const DEFAULT_KUBELET_POLL_MS = numericDefault("kubelet-poll-period");

/** Largest `/pods` body accepted, in bytes (110 full pods are a few MiB). */
export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024;

/** Why a read of the kubelet failed: the `reason` of {@linkcode SourceUnavailableError}. */
export type KubeletFailureReason =
  | "http_401"
  | "http_403"
  | "http_4xx"
  | "http_5xx"
  | "http_other"
  | "invalid_json"
  | "too_large"
  | "timeout"
  | "connect"
  | "tls"
  | "credentials";

/** Options of {@linkcode KubeletPodSource}. */
export interface KubeletPodSourceOptions {
  /** Base URL of the kubelet. @default {DEFAULT_KUBELET_URL} */
  url?: string;
  /**
   * Bearer token file, read at every request (projected tokens rotate).
   * `undefined`: {@linkcode DEFAULT_TOKEN_FILE} when it exists and no client
   * certificate is set; `""`: no token.
   */
  tokenFile?: string;
  /** PEM client certificate (with `clientKeyFile`), for x509 authentication. */
  clientCertFile?: string;
  /** PEM private key of `clientCertFile`. */
  clientKeyFile?: string;
  /** PEM CA certificates the kubelet's serving certificate is checked against. */
  caFile?: string;
  /**
   * Do not verify the kubelet's certificate. Deno cannot do this per client:
   * the process must also run with `--unsafely-ignore-certificate-errors`
   * (see the module documentation). @default {false}
   */
  insecureSkipTlsVerify?: boolean;
  /** The poll period the daemon should relist this source at, in ms. @default {DEFAULT_KUBELET_POLL_MS} */
  pollPeriodMs?: number;
  /** Per-request timeout in ms. @default {DEFAULT_KUBELET_TIMEOUT_MS} */
  timeoutMs?: number;
  /** @default {DEFAULT_MAX_RESPONSE_BYTES} */
  maxResponseBytes?: number;
  log: Logger;
  /** `sourceItemsRejected{source="kubelet"}` counts skipped pods. */
  metrics?: Pick<Metrics, "sourceItemsRejected">;
  /** Reads token, certificate and key files. @default {Deno.readFile} */
  readFile?: (path: string) => Promise<Uint8Array>;
}

interface Credentials {
  readonly token: string | undefined;
  readonly ca: string | undefined;
  readonly cert: string | undefined;
  readonly key: string | undefined;
}

const DECODER = new TextDecoder("utf-8", { fatal: true });

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function statusReason(status: number): KubeletFailureReason {
  if (status === 401) return "http_401";
  if (status === 403) return "http_403";
  if (status >= 500 && status < 600) return "http_5xx";
  if (status >= 400 && status < 500) return "http_4xx";
  return "http_other";
}

/**
 * Reads the node's pods from the local kubelet.
 *
 * Every `list()` fetches `/pods` once. When the body's bytes are the same as
 * last time it is not parsed again and the previous snapshots (the same
 * array) are returned; when it changed, a pod equal to its previous version
 * keeps its previous snapshot object. Pods without a UID (or a name, or a
 * namespace) and repeated UIDs are skipped and counted. HTTP errors, invalid
 * JSON, timeouts and connection failures throw {@linkcode SourceUnavailableError}
 * with a reason ({@linkcode KubeletFailureReason}); the relister counts,
 * logs and backs off, and the merged view keeps the last good pods.
 *
 * Close it (`using`, or `close()`) to release its HTTP client.
 *
 * @example Usage
 * ```ts ignore
 * import { KubeletPodSource } from "./kubelet_source.ts";
 * import { silentLogger } from "../../log.ts";
 * using source = new KubeletPodSource({ caFile: "/var/lib/kubelet/pki/kubelet.crt", log: silentLogger });
 * const pods = await source.list(AbortSignal.timeout(15_000));
 * ```
 */
export class KubeletPodSource implements PolledSource, Disposable {
  /** Always `"kubelet"`. */
  readonly kind = "kubelet" as const;
  /** The period (ms) this source should be relisted at. */
  readonly periodMs: number;
  readonly #url: string;
  readonly #https: boolean;
  readonly #options: KubeletPodSourceOptions;
  readonly #log: Logger;
  readonly #timeoutMs: number;
  readonly #maxBytes: number;
  readonly #readFile: (path: string) => Promise<Uint8Array>;
  readonly #clients = new HttpClientCache();
  #lastBody: Uint8Array | undefined;
  #last: PodSnapshot[] = [];
  #byUid = new Map<string, PodSnapshot>();
  #reported = new Set<string>();
  #warnedInsecure = false;

  /**
   * @param options URL, credentials, TLS, limits, log and metrics.
   * @throws {TypeError} When the URL is not an http(s) URL, or only one of
   *   the client certificate and key is set.
   * @throws {RangeError} When a limit is not a positive number.
   */
  constructor(options: KubeletPodSourceOptions) {
    const raw = options.url ?? DEFAULT_KUBELET_URL;
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new TypeError(`Cannot use kubelet URL "${raw}": it is not a URL`);
    }
    if (url.protocol !== "https:" && url.protocol !== "http:") {
      throw new TypeError(`Cannot use kubelet URL "${raw}": the scheme must be http or https`);
    }
    if ((options.clientCertFile ?? "") === "" !== ((options.clientKeyFile ?? "") === "")) {
      throw new TypeError(
        "Cannot use a kubelet client certificate without its key, or a key without its certificate",
      );
    }
    const timeoutMs = options.timeoutMs ?? DEFAULT_KUBELET_TIMEOUT_MS;
    const maxBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    const periodMs = options.pollPeriodMs ?? DEFAULT_KUBELET_POLL_MS;
    const limits = [["timeoutMs", timeoutMs], ["maxResponseBytes", maxBytes], [
      "pollPeriodMs",
      periodMs,
    ]];
    for (const [name, value] of limits as [string, number][]) {
      if (!Number.isFinite(value) || value <= 0) {
        throw new RangeError(
          `Cannot read the kubelet with ${name} "${value}": it must be positive`,
        );
      }
    }
    this.periodMs = periodMs;
    this.#url = `${url.href.replace(/\/+$/, "")}/pods`;
    this.#https = url.protocol === "https:";
    this.#options = options;
    this.#log = options.log;
    this.#timeoutMs = timeoutMs;
    this.#maxBytes = maxBytes;
    this.#readFile = options.readFile ?? ((path) => Deno.readFile(path));
  }

  /** The URL fetched by {@linkcode KubeletPodSource.list}. */
  get url(): string {
    return this.#url;
  }

  /**
   * Fetches and parses `/pods`.
   *
   * @param signal Abandons the request.
   * @returns Every valid pod the kubelet lists.
   * @throws {SourceUnavailableError} When the kubelet cannot be read now.
   */
  async list(signal: AbortSignal): Promise<readonly PodSnapshot[]> {
    signal.throwIfAborted();
    const credentials = await this.#credentials();
    const client = this.#httpClient(credentials);
    const body = await this.#fetch(signal, credentials, client);
    // From here on nothing awaits: the answer is parsed and committed in one
    // step, and not at all when the read was given up on meanwhile.
    signal.throwIfAborted();
    if (this.#lastBody !== undefined && bytesEqual(body, this.#lastBody)) return this.#last;
    const pods = this.#parse(body);
    this.#lastBody = body;
    return pods;
  }

  /** Releases the HTTP client. */
  close(): void {
    this.#clients.close();
  }

  /** Same as {@linkcode KubeletPodSource.close}. */
  [Symbol.dispose](): void {
    this.close();
  }

  async #readText(path: string, what: string): Promise<string> {
    try {
      return DECODER.decode(await this.#readFile(path));
    } catch (error) {
      throw new SourceUnavailableError(
        `Cannot read kubelet ${what} "${path}": ${errorText(error)}`,
        { reason: "credentials", cause: error },
      );
    }
  }

  async #credentials(): Promise<Credentials> {
    const o = this.#options;
    const cert = o.clientCertFile
      ? await this.#readText(o.clientCertFile, "client certificate")
      : undefined;
    const key = o.clientKeyFile ? await this.#readText(o.clientKeyFile, "client key") : undefined;
    const ca = o.caFile ? await this.#readText(o.caFile, "CA file") : undefined;
    let token: string | undefined;
    if (o.tokenFile !== undefined && o.tokenFile !== "") {
      token = (await this.#readText(o.tokenFile, "token file")).trim();
    } else if (o.tokenFile === undefined && cert === undefined) {
      // The default token only exists when the daemon runs in a pod.
      try {
        token = DECODER.decode(await this.#readFile(DEFAULT_TOKEN_FILE)).trim();
      } catch {
        token = undefined;
      }
    }
    return { token: token === "" ? undefined : token, ca, cert, key };
  }

  #httpClient(credentials: Credentials): Deno.HttpClient | undefined {
    if (!this.#https) return undefined;
    if (this.#options.insecureSkipTlsVerify && !this.#warnedInsecure) {
      this.#warnedInsecure = true;
      this.#log.warn(
        "kubelet TLS verification can only be skipped process-wide: run with --unsafely-ignore-certificate-errors",
        { url: this.#url },
      );
    }
    try {
      return this.#clients.client(credentials);
    } catch (error) {
      throw new SourceUnavailableError(
        `Cannot use the kubelet TLS credentials: ${errorText(error)}`,
        { reason: "credentials", cause: error },
      );
    }
  }

  async #fetch(
    signal: AbortSignal,
    credentials: Credentials,
    client: Deno.HttpClient | undefined,
  ): Promise<Uint8Array> {
    signal.throwIfAborted();
    const call = new AbortController();
    const timeout = new SourceUnavailableError(
      `Cannot read kubelet pods from "${this.#url}": no answer within ${this.#timeoutMs} ms`,
      { reason: "timeout" },
    );
    // A bound on one HTTPS request, an I/O wait: it runs on real time.
    const cancelTimer = systemClock.setTimer(this.#timeoutMs, () => call.abort(timeout));
    const onAbort = () => call.abort(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    const headers: Record<string, string> = { accept: "application/json" };
    if (credentials.token !== undefined) headers.authorization = `Bearer ${credentials.token}`;
    const fail = (reason: KubeletFailureReason, why: string, cause?: unknown) =>
      new SourceUnavailableError(`Cannot read kubelet pods from "${this.#url}": ${why}`, {
        reason,
        cause,
      });
    try {
      let response: Response;
      try {
        const init: RequestInit & { client?: Deno.HttpClient } = { headers, signal: call.signal };
        if (client !== undefined) init.client = client;
        response = await fetch(this.#url, init);
      } catch (error) {
        if (call.signal.aborted) throw call.signal.reason;
        throw fail(fetchFailure(error) === "tls" ? "tls" : "connect", fetchErrorText(error), error);
      }
      if (!response.ok) {
        await response.body?.cancel().catch(() => {});
        throw fail(statusReason(response.status), `HTTP status ${response.status}`);
      }
      try {
        return await readBody(response, this.#maxBytes);
      } catch (error) {
        if (call.signal.aborted) throw call.signal.reason;
        if (error instanceof BodyTooLargeError) throw fail("too_large", error.message);
        throw fail("connect", `reading the answer failed: ${errorText(error)}`, error);
      }
    } finally {
      cancelTimer();
      signal.removeEventListener("abort", onAbort);
    }
  }

  #parse(body: Uint8Array): PodSnapshot[] {
    let doc: unknown;
    try {
      doc = JSON.parse(DECODER.decode(body));
    } catch (error) {
      throw new SourceUnavailableError(
        `Cannot parse kubelet pods from "${this.#url}": ${errorText(error)}`,
        { reason: "invalid_json", cause: error },
      );
    }
    if (!isJsonObject(doc) || !Array.isArray(doc.items) || (doc.kind ?? "PodList") !== "PodList") {
      throw new SourceUnavailableError(
        `Cannot parse kubelet pods from "${this.#url}": the answer is not a PodList`,
        { reason: "invalid_json" },
      );
    }
    const out: PodSnapshot[] = [];
    const byUid = new Map<string, PodSnapshot>();
    const problems: { key: string; reason: string; detail: string }[] = [];
    doc.items.forEach((raw, index) => {
      const item = checkPodItem(raw, index);
      if (!item.ok) {
        problems.push(item);
        return;
      }
      const { uid, pod, where } = item;
      if (byUid.has(uid)) {
        problems.push({
          key: `dup:${uid}`,
          reason: "duplicate_uid",
          detail: `pod ${where} repeats UID "${uid}"`,
        });
        return;
      }
      const previous = this.#byUid.get(uid);
      const snapshot = previous !== undefined && jsonEqual(previous.pod as JsonObject, pod)
        ? previous
        : { uid, pod };
      byUid.set(uid, snapshot);
      out.push(snapshot);
    });
    this.#report(problems);
    this.#byUid = byUid;
    if (sameItems(out, this.#last)) {
      return this.#last;
    }
    this.#last = out;
    return out;
  }

  #report(problems: readonly { key: string; reason: string; detail: string }[]): void {
    const now = new Set<string>();
    for (const { key, reason, detail } of problems) {
      now.add(key);
      if (this.#reported.has(key)) continue;
      this.#options.metrics?.sourceItemsRejected.inc({ source: "kubelet", reason });
      this.#log.warn("skipping kubelet pod", { reason, detail });
    }
    this.#reported = now;
  }
}
