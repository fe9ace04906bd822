/**
 * gRPC status codes, the error that carries one, and their names as Go
 * prints them (the form the kubelet's metrics use).
 *
 * @module
 */

/** The gRPC status codes (grpc/grpc doc/statuscodes.md). */
export const STATUS = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

/** A gRPC status code number. */
export type StatusCode = (typeof STATUS)[keyof typeof STATUS];

/** An error that carries the status a peer sends or received. */
export class GrpcError extends Error {
  /** The status code. */
  readonly code: StatusCode;

  /**
   * @param code The status code.
   * @param message The status message (`grpc-message`).
   * @param options The underlying error (a failed connect's, say).
   */
  constructor(code: StatusCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "GrpcError";
    this.code = code;
  }
}

const GO_NAMES: Readonly<Record<number, string>> = {
  [STATUS.OK]: "OK",
  [STATUS.CANCELLED]: "Canceled",
  [STATUS.UNKNOWN]: "Unknown",
  [STATUS.INVALID_ARGUMENT]: "InvalidArgument",
  [STATUS.DEADLINE_EXCEEDED]: "DeadlineExceeded",
  [STATUS.NOT_FOUND]: "NotFound",
  [STATUS.ALREADY_EXISTS]: "AlreadyExists",
  [STATUS.PERMISSION_DENIED]: "PermissionDenied",
  [STATUS.RESOURCE_EXHAUSTED]: "ResourceExhausted",
  [STATUS.FAILED_PRECONDITION]: "FailedPrecondition",
  [STATUS.ABORTED]: "Aborted",
  [STATUS.OUT_OF_RANGE]: "OutOfRange",
  [STATUS.UNIMPLEMENTED]: "Unimplemented",
  [STATUS.INTERNAL]: "Internal",
  [STATUS.UNAVAILABLE]: "Unavailable",
  [STATUS.DATA_LOSS]: "DataLoss",
  [STATUS.UNAUTHENTICATED]: "Unauthenticated",
};

/**
 * Names a status code as Go's `codes.Code.String()` does.
 *
 * @param code A status code.
 * @returns `OK`, `NotFound`, ... or `Code(n)` for an unknown one.
 */
export function goCodeName(code: number): string {
  return GO_NAMES[code] ?? `Code(${code})`;
}

/**
 * @param value A `grpc-status` header value.
 * @returns The code, or `undefined` when the value is not a status code.
 */
export function parseStatusCode(value: string | undefined): StatusCode | undefined {
  if (value === undefined || !/^\d{1,2}$/.test(value)) return undefined;
  const n = Number(value);
  return n <= STATUS.UNAUTHENTICATED ? n as StatusCode : undefined;
}

/**
 * The status a client derives from a non-200 HTTP response (gRPC's
 * http-grpc-status-mapping).
 *
 * @param httpStatus The `:status`.
 * @returns The gRPC code.
 */
export function statusFromHttp(httpStatus: number): StatusCode {
  switch (httpStatus) {
    case 400:
      return STATUS.INTERNAL;
    case 401:
      return STATUS.UNAUTHENTICATED;
    case 403:
      return STATUS.PERMISSION_DENIED;
    case 404:
      return STATUS.UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
      return STATUS.UNAVAILABLE;
    default:
      return STATUS.UNKNOWN;
  }
}
