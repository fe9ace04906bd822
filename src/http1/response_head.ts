/**
 * An HTTP/1.1 response head and the chunked coding of a streamed body.
 *
 * @module
 */

const REASONS: Readonly<Record<number, string>> = {
  200: "OK",
  201: "Created",
  204: "No Content",
  304: "Not Modified",
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  406: "Not Acceptable",
  408: "Request Timeout",
  410: "Gone",
  413: "Content Too Large",
  429: "Too Many Requests",
  431: "Request Header Fields Too Large",
  500: "Internal Server Error",
  501: "Not Implemented",
  503: "Service Unavailable",
  505: "HTTP Version Not Supported",
};

const ENCODER = new TextEncoder();

/** How the body of a response travels. */
export type BodyFraming =
  | { readonly kind: "length"; readonly length: number }
  | { readonly kind: "chunked" }
  /** HTTP/1.0: the body ends when the connection does. */
  | { readonly kind: "close" };

/**
 * The bytes of a status line and header block.
 *
 * @param status The status code.
 * @param headers The handler's headers; framing fields among them are replaced.
 * @param framing How the body is delimited.
 * @param keepAlive Whether the connection stays open after the response.
 * @returns The head, ending with its blank line.
 */
export function responseHead(
  status: number,
  headers: Headers,
  framing: BodyFraming,
  keepAlive: boolean,
): Uint8Array {
  let text = `HTTP/1.1 ${status} ${REASONS[status] ?? "Status"}\r\n`;
  for (const [name, value] of headers) {
    if (name === "content-length" || name === "transfer-encoding" || name === "connection") {
      continue;
    }
    text += `${name}: ${value}\r\n`;
  }
  if (framing.kind === "length") text += `content-length: ${framing.length}\r\n`;
  if (framing.kind === "chunked") text += "transfer-encoding: chunked\r\n";
  text += keepAlive ? "\r\n" : "connection: close\r\n\r\n";
  return ENCODER.encode(text);
}

/**
 * One chunk of a chunked body: size in hex, the data, CRLF.
 *
 * @param data A non-empty piece of the body.
 * @returns The chunk's bytes.
 */
export function chunk(data: Uint8Array): Uint8Array {
  const size = ENCODER.encode(`${data.length.toString(16)}\r\n`);
  const out = new Uint8Array(size.length + data.length + 2);
  out.set(size);
  out.set(data, size.length);
  out[out.length - 2] = 0x0d;
  out[out.length - 1] = 0x0a;
  return out;
}

/** The last chunk of a chunked body, with no trailers. */
export const LAST_CHUNK: Uint8Array = ENCODER.encode("0\r\n\r\n");

/**
 * A short plain-text response head and body for errors the server answers itself.
 *
 * @param status 400, 408, 413, 431, 501, 505...
 * @param message The body's one line.
 * @returns Head and body, with `connection: close`.
 */
export function plainError(status: number, message: string): Uint8Array {
  const body = ENCODER.encode(`${message}\n`);
  const head = responseHead(
    status,
    new Headers({ "content-type": "text/plain; charset=utf-8" }),
    { kind: "length", length: body.length },
    false,
  );
  const out = new Uint8Array(head.length + body.length);
  out.set(head);
  out.set(body, head.length);
  return out;
}
