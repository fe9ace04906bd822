/**
 * An HTTP/1.1 request head (RFC 9112 §3, §5): the request line and the
 * header fields, read strictly. Anything a lenient parser would have to
 * guess at (a bare LF, a space before the colon, an obsolete line fold, two
 * lengths, a transfer coding) is a `400` and the connection closes, as Go's
 * server does, so no proxy in front can read the request another way.
 *
 * @module
 */

/** A request head the server cannot serve, with the status to answer. */
export class RequestHeadError extends Error {
  override readonly name = "RequestHeadError";
  /** The HTTP status to answer before closing: 400, 413, 431, 501 or 505. */
  readonly status: number;

  /**
   * @param status The HTTP status to answer.
   * @param message Why, as the response body says it.
   */
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

/** A parsed request head. */
export interface RequestHead {
  readonly method: string;
  /** The request target as sent: origin form (`/pods?x`) or absolute form. */
  readonly target: string;
  /** 0 for HTTP/1.0, 1 for HTTP/1.1. */
  readonly minor: 0 | 1;
  /** Field names in lower case, in the order sent. */
  readonly fields: readonly (readonly [string, string])[];
  /** Bytes of body that follow (`Content-Length`; 0 when absent). */
  readonly contentLength: number;
  /** Whether the client asked to keep the connection open after this response. */
  readonly keepAlive: boolean;
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const TARGET = /^[\x21-\x7e]+$/;
const DECODER = new TextDecoder("latin1");

/**
 * The index just past the blank line that ends a head in `buf[0..length)`, or -1.
 *
 * @param buf Bytes read so far.
 * @param length How many of them are filled.
 * @param from Where the previous search stopped (so each byte is scanned about once).
 * @returns The end of the head, or -1 when it is not complete yet.
 */
export function headEnd(buf: Uint8Array, length: number, from = 0): number {
  for (let i = Math.max(3, from); i < length; i++) {
    if (buf[i] === 0x0a && buf[i - 1] === 0x0d && buf[i - 2] === 0x0a && buf[i - 3] === 0x0d) {
      return i + 1;
    }
  }
  return -1;
}

/**
 * Parses a complete head (up to and including its blank line).
 *
 * @param bytes The head's bytes.
 * @returns The request head.
 * @throws {RequestHeadError} For a head that is malformed or asks for what is not served.
 */
export function parseRequestHead(bytes: Uint8Array): RequestHead {
  const lines = DECODER.decode(bytes).split("\r\n");
  // Ends with "\r\n\r\n": two empty items after the last field.
  lines.length -= 2;
  const requestLine = lines[0] ?? "";
  const parts = requestLine.split(" ");
  if (parts.length !== 3) throw new RequestHeadError(400, "malformed request line");
  const [method, target, version] = parts as [string, string, string];
  if (!TOKEN.test(method)) throw new RequestHeadError(400, "malformed method");
  if (!TARGET.test(target)) throw new RequestHeadError(400, "malformed request target");
  if (!/^HTTP\/\d\.\d$/.test(version)) throw new RequestHeadError(400, "malformed HTTP version");
  if (version !== "HTTP/1.1" && version !== "HTTP/1.0") {
    throw new RequestHeadError(505, `HTTP version not supported: ${version}`);
  }
  const minor = version === "HTTP/1.1" ? 1 : 0;
  const fields: [string, string][] = [];
  let contentLength: number | undefined;
  let connection = "";
  let host = 0;
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.includes("\n") || line.includes("\r")) {
      throw new RequestHeadError(400, "bare CR or LF in the header");
    }
    const colon = line.indexOf(":");
    if (colon <= 0) throw new RequestHeadError(400, "malformed header field");
    const name = line.slice(0, colon);
    if (!TOKEN.test(name)) throw new RequestHeadError(400, "malformed header field name");
    const value = line.slice(colon + 1).replace(/^[ \t]+|[ \t]+$/g, "");
    if (!FIELD_VALUE.test(value)) throw new RequestHeadError(400, "malformed header field value");
    const lower = name.toLowerCase();
    switch (lower) {
      case "content-length": {
        if (!/^\d{1,15}$/.test(value)) throw new RequestHeadError(400, "malformed Content-Length");
        const n = Number(value);
        if (contentLength !== undefined && contentLength !== n) {
          throw new RequestHeadError(400, "conflicting Content-Length");
        }
        contentLength = n;
        break;
      }
      case "transfer-encoding":
        throw new RequestHeadError(501, "request bodies with a transfer coding are not accepted");
      case "connection":
        connection += `,${value.toLowerCase()}`;
        break;
      case "host":
        host++;
        break;
    }
    fields.push([lower, value]);
  }
  if (minor === 1 && host !== 1) {
    throw new RequestHeadError(400, host === 0 ? "missing Host header" : "too many Host headers");
  }
  const tokens = connection.split(",").map((t) => t.trim());
  const keepAlive = minor === 1 ? !tokens.includes("close") : tokens.includes("keep-alive");
  return { method, target, minor, fields, contentLength: contentLength ?? 0, keepAlive };
}
