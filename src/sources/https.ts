/**
 * HTTP plumbing the sources that speak Kubernetes' HTTP share (the
 * kubelet's `/pods`, the API server): one `Deno.HttpClient` per set of TLS
 * credentials, rebuilt when a rotated file changes them; reading a body
 * with a size limit; and naming why a `fetch` failed (TLS, DNS, connect).
 *
 * @module
 */

import { concatBytes } from "../bytes_concat.ts";

/** TLS material of one HTTP client, as PEM texts. */
export interface TlsMaterial {
  /** CA bundle the server's certificate is checked against (absent: system roots). */
  readonly ca?: string | undefined;
  /** Client certificate and key; both or neither. */
  readonly cert?: string | undefined;
  readonly key?: string | undefined;
}

/**
 * Holds one `Deno.HttpClient` for the current TLS material and makes a new
 * one when the material changes (a rotated certificate).
 *
 * @example Usage
 * ```ts
 * import { HttpClientCache } from "./https.ts";
 * using cache = new HttpClientCache();
 * console.assert(cache.client({}) === undefined); // no CA, no certificate: fetch's default
 * ```
 */
export class HttpClientCache implements Disposable {
  #client: Deno.HttpClient | undefined;
  #key = "";

  /**
   * The client for this material.
   *
   * @param tls PEM texts.
   * @returns The client, or `undefined` when the material is empty (plain `fetch` will do).
   * @throws {Error} When Deno refuses the material (not PEM, key not matching).
   */
  client(tls: TlsMaterial): Deno.HttpClient | undefined {
    const { ca, cert, key } = tls;
    if (ca === undefined && cert === undefined) return undefined;
    const cacheKey = `${ca ?? ""}\0${cert ?? ""}\0${key ?? ""}`;
    if (this.#client !== undefined && cacheKey === this.#key) return this.#client;
    this.close();
    const caCerts = ca === undefined ? [] : [ca];
    this.#client = cert !== undefined && key !== undefined
      ? Deno.createHttpClient({ caCerts, cert, key })
      : Deno.createHttpClient({ caCerts });
    this.#key = cacheKey;
    return this.#client;
  }

  /** Closes the client. */
  close(): void {
    this.#client?.close();
    this.#client = undefined;
    this.#key = "";
  }

  /** Same as {@linkcode HttpClientCache.close}. */
  [Symbol.dispose](): void {
    this.close();
  }
}

/** Why a `fetch` got no response. */
export type FetchFailure = "tls" | "dns" | "connect";

const TLS_ERROR_REGEXP = /certificate|tls|handshake|UnknownIssuer|NotValidForName|CertExpired/i;
const DNS_ERROR_REGEXP = /dns error|failed to lookup address|name or service not known/i;

/**
 * The message of an error and of its cause (Deno's fetch puts the useful
 * part in the cause).
 *
 * @param error What `fetch` threw.
 * @returns The text.
 */
export function fetchErrorText(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  const cause = error instanceof Error && error.cause instanceof Error
    ? ` ${error.cause.message}`
    : "";
  return text + cause;
}

/**
 * Names why a `fetch` failed before any response.
 *
 * @example Usage
 * ```ts
 * import { fetchFailure } from "./https.ts";
 * fetchFailure(new TypeError("client error (Connect): invalid peer certificate: UnknownIssuer")); // "tls"
 * ```
 *
 * @param error What `fetch` threw.
 * @returns `tls`, `dns` or `connect`.
 */
export function fetchFailure(error: unknown): FetchFailure {
  const text = fetchErrorText(error);
  if (DNS_ERROR_REGEXP.test(text)) return "dns";
  return TLS_ERROR_REGEXP.test(text) ? "tls" : "connect";
}

/** Raised by {@linkcode readBody} when the body is larger than allowed. */
export class BodyTooLargeError extends Error {
  /** @param maxBytes The limit. */
  constructor(maxBytes: number) {
    super(`the answer is larger than ${maxBytes} bytes`);
    this.name = "BodyTooLargeError";
  }
}

/**
 * Reads a whole response body, refusing one larger than `maxBytes`.
 *
 * @param response The response.
 * @param maxBytes The limit.
 * @returns The bytes.
 * @throws {BodyTooLargeError} When the body is larger (the rest is cancelled).
 * @throws {Error} When reading fails (the connection broke).
 */
export async function readBody(response: Response, maxBytes: number): Promise<Uint8Array> {
  const reader = response.body?.getReader();
  if (reader === undefined) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.length;
      if (size > maxBytes) {
        await reader.cancel().catch(() => {});
        throw new BodyTooLargeError(maxBytes);
      }
      chunks.push(value);
    }
  } finally {
    reader.releaseLock();
  }
  return chunks.length === 1 ? chunks[0]! : concatBytes(chunks);
}
