/**
 * HTTP/2 error codes (RFC 9113 section 7) and the two ways an endpoint
 * reports them: on one stream (RST_STREAM) or on the whole connection
 * (GOAWAY, then close).
 *
 * @module
 */

/** The error codes of RFC 9113 section 7. */
export const H2_ERROR = {
  NO_ERROR: 0x0,
  PROTOCOL_ERROR: 0x1,
  INTERNAL_ERROR: 0x2,
  FLOW_CONTROL_ERROR: 0x3,
  SETTINGS_TIMEOUT: 0x4,
  STREAM_CLOSED: 0x5,
  FRAME_SIZE_ERROR: 0x6,
  REFUSED_STREAM: 0x7,
  CANCEL: 0x8,
  COMPRESSION_ERROR: 0x9,
  CONNECT_ERROR: 0xa,
  ENHANCE_YOUR_CALM: 0xb,
  INADEQUATE_SECURITY: 0xc,
  HTTP_1_1_REQUIRED: 0xd,
} as const;

/** An HTTP/2 error code number. */
export type H2ErrorCode = (typeof H2_ERROR)[keyof typeof H2_ERROR];

const NAMES = new Map<number, string>(Object.entries(H2_ERROR).map(([k, v]) => [v, k]));

/**
 * Names an error code as RFC 9113 does.
 *
 * @param code An error code, possibly one this module does not know.
 * @returns `PROTOCOL_ERROR`, ... or `0x1f` for an unknown code.
 */
export function h2ErrorName(code: number): string {
  return NAMES.get(code) ?? `0x${code.toString(16)}`;
}

/** The peer broke the protocol in a way that ends the whole connection (GOAWAY). */
export class ConnectionError extends Error {
  /** The code sent in GOAWAY. */
  readonly code: H2ErrorCode;

  /**
   * @param code The GOAWAY code.
   * @param message Why, for the log and GOAWAY's debug data.
   */
  constructor(code: H2ErrorCode, message: string) {
    super(message);
    this.name = "ConnectionError";
    this.code = code;
  }
}

/** The peer broke the protocol on one stream only (RST_STREAM). */
export class StreamError extends Error {
  /** The code sent in RST_STREAM. */
  readonly code: H2ErrorCode;
  /** The stream it concerns. */
  readonly streamId: number;

  /**
   * @param streamId The stream to reset.
   * @param code The RST_STREAM code.
   * @param message Why, for the log.
   */
  constructor(streamId: number, code: H2ErrorCode, message: string) {
    super(message);
    this.name = "StreamError";
    this.streamId = streamId;
    this.code = code;
  }
}
