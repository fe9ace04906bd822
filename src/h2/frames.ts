/**
 * The HTTP/2 frame layout (RFC 9113 section 4): the 9-byte frame header,
 * frame types and flags, and builders for the frames that carry no
 * application data.
 *
 * @module
 */

/** Frame types (RFC 9113 section 6). */
export const FRAME_TYPE = {
  DATA: 0x0,
  HEADERS: 0x1,
  PRIORITY: 0x2,
  RST_STREAM: 0x3,
  SETTINGS: 0x4,
  PUSH_PROMISE: 0x5,
  PING: 0x6,
  GOAWAY: 0x7,
  WINDOW_UPDATE: 0x8,
  CONTINUATION: 0x9,
} as const;

/** Frame flags; ACK and END_STREAM share a bit on different frame types. */
export const FLAG = {
  END_STREAM: 0x1,
  ACK: 0x1,
  END_HEADERS: 0x4,
  PADDED: 0x8,
  PRIORITY: 0x20,
} as const;

/** Bytes of a frame header. */
export const FRAME_HEADER_BYTES = 9;

/** What every client sends first (RFC 9113 section 3.4). */
export const CLIENT_PREFACE: Uint8Array = new TextEncoder().encode(
  "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
);

/** The largest stream id and window (2^31 - 1). */
export const MAX_INT31 = 0x7fffffff;

/** A parsed frame header. */
export interface FrameHeader {
  readonly length: number;
  readonly type: number;
  readonly flags: number;
  /** The stream, with the reserved bit cleared. */
  readonly streamId: number;
}

/**
 * Reads a frame header.
 *
 * @param bytes Holds at least 9 bytes from `offset`.
 * @param offset Where the header starts.
 * @returns The header.
 */
export function readFrameHeader(bytes: Uint8Array, offset: number): FrameHeader {
  return {
    length: (bytes[offset]! << 16) | (bytes[offset + 1]! << 8) | bytes[offset + 2]!,
    type: bytes[offset + 3]!,
    flags: bytes[offset + 4]!,
    streamId: readUint31(bytes, offset + 5),
  };
}

/**
 * Writes a frame header in place.
 *
 * @param target Where to write; 9 bytes from `offset` must fit.
 * @param offset Where the header starts.
 * @param length Payload length.
 * @param type Frame type.
 * @param flags Frame flags.
 * @param streamId Stream id (0 for the connection).
 */
export function writeFrameHeader(
  target: Uint8Array,
  offset: number,
  length: number,
  type: number,
  flags: number,
  streamId: number,
): void {
  target[offset] = length >>> 16;
  target[offset + 1] = (length >>> 8) & 0xff;
  target[offset + 2] = length & 0xff;
  target[offset + 3] = type;
  target[offset + 4] = flags;
  writeUint32(target, offset + 5, streamId & MAX_INT31);
}

/**
 * Reads a 31-bit big-endian number, ignoring the reserved top bit.
 *
 * @param bytes The bytes.
 * @param offset Where the 4 bytes start.
 * @returns The number.
 */
export function readUint31(bytes: Uint8Array, offset: number): number {
  return readUint32(bytes, offset) & MAX_INT31;
}

/**
 * Reads a 32-bit big-endian unsigned number.
 *
 * @param bytes The bytes.
 * @param offset Where the 4 bytes start.
 * @returns The number.
 */
export function readUint32(bytes: Uint8Array, offset: number): number {
  return ((bytes[offset]! << 24) | (bytes[offset + 1]! << 16) | (bytes[offset + 2]! << 8) |
    bytes[offset + 3]!) >>> 0;
}

function writeUint32(target: Uint8Array, offset: number, value: number): void {
  target[offset] = value >>> 24;
  target[offset + 1] = (value >>> 16) & 0xff;
  target[offset + 2] = (value >>> 8) & 0xff;
  target[offset + 3] = value & 0xff;
}

/**
 * Builds a whole frame in one new buffer.
 *
 * @param type Frame type.
 * @param flags Frame flags.
 * @param streamId Stream id.
 * @param payload The payload, copied after the header.
 * @returns Header and payload.
 */
export function buildFrame(
  type: number,
  flags: number,
  streamId: number,
  payload: Uint8Array = new Uint8Array(0),
): Uint8Array {
  const frame = new Uint8Array(FRAME_HEADER_BYTES + payload.byteLength);
  writeFrameHeader(frame, 0, payload.byteLength, type, flags, streamId);
  frame.set(payload, FRAME_HEADER_BYTES);
  return frame;
}

/**
 * @param entries SETTINGS identifiers and values, in order.
 * @returns A SETTINGS frame (not an ACK).
 */
export function settingsFrame(entries: readonly (readonly [number, number])[]): Uint8Array {
  const payload = new Uint8Array(entries.length * 6);
  entries.forEach(([id, value], i) => {
    payload[i * 6] = id >>> 8;
    payload[i * 6 + 1] = id & 0xff;
    writeUint32(payload, i * 6 + 2, value);
  });
  return buildFrame(FRAME_TYPE.SETTINGS, 0, 0, payload);
}

/** The SETTINGS acknowledgement, always the same bytes. */
export const SETTINGS_ACK: Uint8Array = buildFrame(FRAME_TYPE.SETTINGS, FLAG.ACK, 0);

/**
 * @param data The 8 opaque bytes.
 * @param ack Whether this answers a PING.
 * @returns A PING frame.
 */
export function pingFrame(data: Uint8Array, ack: boolean): Uint8Array {
  return buildFrame(FRAME_TYPE.PING, ack ? FLAG.ACK : 0, 0, data);
}

/**
 * @param lastStreamId The highest peer stream this endpoint processed or may still process.
 * @param code The error code.
 * @param debug Text for the peer's logs (kept short).
 * @returns A GOAWAY frame.
 */
export function goawayFrame(lastStreamId: number, code: number, debug = ""): Uint8Array {
  const text = new TextEncoder().encode(debug.slice(0, 256));
  const payload = new Uint8Array(8 + text.byteLength);
  writeUint32(payload, 0, lastStreamId & MAX_INT31);
  writeUint32(payload, 4, code);
  payload.set(text, 8);
  return buildFrame(FRAME_TYPE.GOAWAY, 0, 0, payload);
}

/**
 * @param streamId The stream.
 * @param code The error code.
 * @returns An RST_STREAM frame.
 */
export function rstStreamFrame(streamId: number, code: number): Uint8Array {
  const payload = new Uint8Array(4);
  writeUint32(payload, 0, code);
  return buildFrame(FRAME_TYPE.RST_STREAM, 0, streamId, payload);
}

/**
 * @param streamId The stream, or 0 for the connection.
 * @param increment Bytes the peer may send more (1 to 2^31 - 1).
 * @returns A WINDOW_UPDATE frame.
 */
export function windowUpdateFrame(streamId: number, increment: number): Uint8Array {
  const payload = new Uint8Array(4);
  writeUint32(payload, 0, increment & MAX_INT31);
  return buildFrame(FRAME_TYPE.WINDOW_UPDATE, 0, streamId, payload);
}
