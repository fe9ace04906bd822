/**
 * The one table from errors to gRPC status codes. Handlers throw; only this
 * module decides what a client sees.
 *
 * @module
 */

import { status as GrpcStatus } from "@grpc/grpc-js";
import { FieldMaskError } from "../fieldmask/mod.ts";

/** A gRPC status code number (grpc-js `status`). */
export type StatusCode = GrpcStatus;

/** An error that carries the status the client should receive. */
export class RpcError extends Error {
  readonly code: StatusCode;

  /**
   * @param code The gRPC status code.
   * @param message The message the client sees.
   */
  constructor(code: StatusCode, message: string) {
    super(message);
    this.name = "RpcError";
    this.code = code;
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
  if (err instanceof RpcError) return { code: err.code, details: err.message };
  if (err instanceof FieldMaskError) {
    return { code: GrpcStatus.INVALID_ARGUMENT, details: err.message };
  }
  return { code: GrpcStatus.INTERNAL, details: MESSAGES.internal, internalCause: err };
}

const GO_CODE_NAMES: Readonly<Record<number, string>> = {
  [GrpcStatus.OK]: "OK",
  [GrpcStatus.CANCELLED]: "Canceled",
  [GrpcStatus.UNKNOWN]: "Unknown",
  [GrpcStatus.INVALID_ARGUMENT]: "InvalidArgument",
  [GrpcStatus.DEADLINE_EXCEEDED]: "DeadlineExceeded",
  [GrpcStatus.NOT_FOUND]: "NotFound",
  [GrpcStatus.ALREADY_EXISTS]: "AlreadyExists",
  [GrpcStatus.PERMISSION_DENIED]: "PermissionDenied",
  [GrpcStatus.RESOURCE_EXHAUSTED]: "ResourceExhausted",
  [GrpcStatus.FAILED_PRECONDITION]: "FailedPrecondition",
  [GrpcStatus.ABORTED]: "Aborted",
  [GrpcStatus.OUT_OF_RANGE]: "OutOfRange",
  [GrpcStatus.UNIMPLEMENTED]: "Unimplemented",
  [GrpcStatus.INTERNAL]: "Internal",
  [GrpcStatus.UNAVAILABLE]: "Unavailable",
  [GrpcStatus.DATA_LOSS]: "DataLoss",
  [GrpcStatus.UNAUTHENTICATED]: "Unauthenticated",
};

/**
 * Names a status code as Go's `codes.Code.String()` prints it, the form the
 * kubelet uses in its `status_code` metric label.
 *
 * @param code A gRPC status code.
 * @returns `OK`, `NotFound`, `ResourceExhausted`, ...
 */
export function goCodeName(code: StatusCode): string {
  return GO_CODE_NAMES[code] ?? `Code(${code})`;
}
