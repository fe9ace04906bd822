/**
 * The one table from errors to gRPC status codes. Handlers throw; only this
 * module decides what a client sees.
 *
 * @module
 */

import { FieldMaskError } from "../fieldmask/mod.ts";
import { GrpcError, STATUS, type StatusCode } from "../grpc/status.ts";
import { LookupError, ResumeTokenError, SelectorError, WatchDroppedError } from "../query/mod.ts";
import { Refusal, REFUSAL_MESSAGES, type RefusalReason } from "../serving/mod.ts";

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

/**
 * The messages of DESIGN.md §9 a handler sends itself; a refusal before serving is
 * the serving core's, with its words (`REFUSAL_MESSAGES`).
 */
export const MESSAGES = {
  tooSlow: "watch client too slow, dropped",
  /** A watch ended by shutdown: the same words as a call refused by it. */
  shuttingDown: REFUSAL_MESSAGES["shutting_down"],
  internal: "internal error",
} as const;

/** The gRPC code of each refusal of the serving core. */
const REFUSAL_CODES: Readonly<Record<RefusalReason, StatusCode>> = {
  "shutting_down": STATUS.UNAVAILABLE,
  "not_synced": STATUS.FAILED_PRECONDITION,
  "rate_limited": STATUS.RESOURCE_EXHAUSTED,
  "too_many_watchers": STATUS.RESOURCE_EXHAUSTED,
};

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
  if (err instanceof Refusal) return { code: REFUSAL_CODES[err.reason], details: err.message };
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

/**
 * Decodes a request message; bytes that do not decode are the client's
 * error, INVALID_ARGUMENT naming the method.
 *
 * @param method The method, as its message is named (`GetPod`, `List`).
 * @param decode Decodes the request.
 * @returns The decoded request.
 * @throws {RpcError} INVALID_ARGUMENT when `decode` throws.
 */
export function decodeRequest<T>(method: string, decode: () => T): T {
  try {
    return decode();
  } catch (err) {
    throw new RpcError(
      STATUS.INVALID_ARGUMENT,
      `Cannot decode ${method} request: ${(err as Error).message}`,
    );
  }
}
