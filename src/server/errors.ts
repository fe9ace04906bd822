/**
 * The one table from errors to gRPC status codes. Handlers throw; only this
 * module decides what a client sees.
 *
 * @module
 */

import { FieldMaskError } from "../fieldmask/mod.ts";
import { GrpcError, STATUS, type StatusCode } from "../grpc/status.ts";
import { LookupError, ResumeTokenError, SelectorError, WatchDroppedError } from "../query/mod.ts";

export { goCodeName, STATUS, type StatusCode } from "../grpc/status.ts";

/** An error that carries the status the client should receive. */
export class RpcError extends GrpcError {
  /**
   * @param code The gRPC status code.
   * @param message The message the client sees.
   */
  constructor(code: StatusCode, message: string) {
    super(code, message);
    this.name = "RpcError";
  }
}

/** The messages of SPEC §9, shared by both services. */
export const MESSAGES = {
  notSynced: "pod sources are still initializing",
  rateLimited: "rejected by rate limit",
  tooSlow: "watch client too slow, dropped",
  shuttingDown: "server is shutting down",
  tooManyWatchers: "too many concurrent watch streams",
  internal: "internal error",
} as const;

/** The status a client receives, plus whether the cause must be logged. */
export interface StatusOutcome {
  code: StatusCode;
  details: string;
  /** Set for unexpected errors: the cause goes to the log, never to the client. */
  internalCause?: unknown;
}

/**
 * Maps any thrown value to the status the client receives.
 *
 * @param err What a handler threw.
 * @returns Code and message; unexpected errors become INTERNAL with a generic message.
 */
export function toStatus(err: unknown): StatusOutcome {
  if (err instanceof GrpcError) return { code: err.code, details: err.message };
  if (err instanceof FieldMaskError) {
    return { code: STATUS.INVALID_ARGUMENT, details: err.message };
  }
  if (err instanceof SelectorError || err instanceof LookupError) {
    return { code: STATUS.INVALID_ARGUMENT, details: err.message };
  }
  if (err instanceof ResumeTokenError) {
    // An expired token is the API server's 410 Gone: the client lists again.
    const code = err.problem === "expired" ? STATUS.OUT_OF_RANGE : STATUS.INVALID_ARGUMENT;
    return { code, details: err.message };
  }
  if (err instanceof WatchDroppedError) {
    return { code: STATUS.RESOURCE_EXHAUSTED, details: MESSAGES.tooSlow };
  }
  return { code: STATUS.INTERNAL, details: MESSAGES.internal, internalCause: err };
}
