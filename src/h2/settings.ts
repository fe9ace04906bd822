/**
 * HTTP/2 SETTINGS (RFC 9113 section 6.5): identifiers, initial values, and
 * the checks a received SETTINGS frame must pass.
 *
 * @module
 */

import { ConnectionError, H2_ERROR } from "./errors.ts";
import { MAX_INT31, readUint32 } from "./frames.ts";

/** SETTINGS identifiers. */
export const SETTING = {
  HEADER_TABLE_SIZE: 0x1,
  ENABLE_PUSH: 0x2,
  MAX_CONCURRENT_STREAMS: 0x3,
  INITIAL_WINDOW_SIZE: 0x4,
  MAX_FRAME_SIZE: 0x5,
  MAX_HEADER_LIST_SIZE: 0x6,
} as const;

/** One side's settings. */
export interface Settings {
  headerTableSize: number;
  enablePush: boolean;
  maxConcurrentStreams: number;
  initialWindowSize: number;
  maxFrameSize: number;
  maxHeaderListSize: number;
}

/** The values in force before any SETTINGS frame arrives (RFC 9113 section 6.5.2). */
export const INITIAL_SETTINGS: Readonly<Settings> = Object.freeze({
  headerTableSize: 4096,
  enablePush: true,
  maxConcurrentStreams: Infinity,
  initialWindowSize: 65_535,
  maxFrameSize: 16_384,
  maxHeaderListSize: Infinity,
});

/** The largest frame payload any peer may allow (2^24 - 1). */
export const MAX_ALLOWED_FRAME_SIZE = 0xffffff;

/**
 * Applies a received SETTINGS payload to `settings`.
 *
 * @param settings The peer's settings, updated in place.
 * @param payload The frame payload (a multiple of 6 bytes, checked by the caller).
 * @returns The change of the initial window size, to apply to open streams.
 * @throws {ConnectionError} PROTOCOL_ERROR or FLOW_CONTROL_ERROR for a value out of range.
 */
export function applySettings(settings: Settings, payload: Uint8Array): number {
  const windowBefore = settings.initialWindowSize;
  for (let i = 0; i + 6 <= payload.byteLength; i += 6) {
    const id = (payload[i]! << 8) | payload[i + 1]!;
    const value = readUint32(payload, i + 2);
    switch (id) {
      case SETTING.HEADER_TABLE_SIZE:
        settings.headerTableSize = value;
        break;
      case SETTING.ENABLE_PUSH:
        if (value > 1) {
          throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, `SETTINGS_ENABLE_PUSH of ${value}`);
        }
        settings.enablePush = value === 1;
        break;
      case SETTING.MAX_CONCURRENT_STREAMS:
        settings.maxConcurrentStreams = value;
        break;
      case SETTING.INITIAL_WINDOW_SIZE:
        if (value > MAX_INT31) {
          throw new ConnectionError(
            H2_ERROR.FLOW_CONTROL_ERROR,
            `SETTINGS_INITIAL_WINDOW_SIZE of ${value} is above 2^31-1`,
          );
        }
        settings.initialWindowSize = value;
        break;
      case SETTING.MAX_FRAME_SIZE:
        if (value < INITIAL_SETTINGS.maxFrameSize || value > MAX_ALLOWED_FRAME_SIZE) {
          throw new ConnectionError(H2_ERROR.PROTOCOL_ERROR, `SETTINGS_MAX_FRAME_SIZE of ${value}`);
        }
        settings.maxFrameSize = value;
        break;
      case SETTING.MAX_HEADER_LIST_SIZE:
        settings.maxHeaderListSize = value;
        break;
      default:
        // Unknown settings must be ignored (RFC 9113 section 6.5.2).
        break;
    }
  }
  return settings.initialWindowSize - windowBefore;
}
