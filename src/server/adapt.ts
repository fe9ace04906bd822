/**
 * Bridges grpc-js calls and the plain async handlers: an AbortSignal from
 * cancel and deadline, exactly one settlement per call, backpressure for
 * streams, and the request metrics of SPEC §10 counted when a call ends.
 *
 * @module
 */

import type {
  Metadata,
  sendUnaryData,
  ServerUnaryCall,
  ServerWritableStream,
  ServiceError,
} from "@grpc/grpc-js";
import { Metadata as GrpcMetadata, status } from "@grpc/grpc-js";
import { Buffer } from "node:buffer";
import type { Logger } from "../log.ts";
import type { Metrics, ServerApiVersion } from "../metrics/metrics.ts";
import type { CallContext, WatchSink } from "./call_context.ts";
import { goCodeName, type StatusCode, toStatus } from "./errors.ts";

/** Which request counter a method feeds. */
export type MethodKind = "list" | "get" | "watch";

/** Options shared by the adapters. */
export interface AdaptOptions {
  apiVersion: ServerApiVersion;
  method: MethodKind;
  metrics: Metrics;
  log: Logger;
}

type AnyCall = ServerUnaryCall<Buffer, Buffer> | ServerWritableStream<Buffer, Buffer>;

function metadataReader(metadata: Metadata): CallContext["metadata"] {
  return (key) => metadata.get(key) as (string | Buffer)[];
}

function callSignal(call: AnyCall): AbortSignal {
  const controller = new AbortController();
  (call as { on(event: "cancelled", listener: () => void): unknown }).on(
    "cancelled",
    () => controller.abort(),
  );
  return controller.signal;
}

function deadlinePassed(call: AnyCall): boolean {
  const deadline = call.getDeadline();
  const ms = deadline instanceof Date ? deadline.getTime() : deadline;
  return Number.isFinite(ms) && ms <= Date.now();
}

function count(options: AdaptOptions, code: StatusCode): void {
  const labels = { "server_api_version": options.apiVersion, "status_code": goCodeName(code) };
  options.metrics.requests.inc(labels);
  const byMethod = {
    list: options.metrics.requestsList,
    get: options.metrics.requestsGet,
    watch: options.metrics.requestsWatch,
  }[options.method];
  byMethod.inc(labels);
}

function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function serviceError(code: StatusCode, details: string): Partial<ServiceError> {
  return { code, details, message: details };
}

/** The part of grpc-js's stream implementation that sends trailers at once. */
interface StatusSender {
  call?: { sendStatus(status: { code: number; details: string; metadata: Metadata }): void };
}

type BacklogWrite = (chunk: unknown, encoding: string, callback: () => void) => void;

function discardFrame(_chunk: unknown, _encoding: string, callback: () => void): void {
  callback();
}

/**
 * Ends a stream with an error status. With nothing buffered the stream's own
 * error path flushes and ends it; with frames still buffered (a client that
 * stopped reading) the trailers go out at once and the backlog is discarded,
 * since the stream's normal end would wait for a drain that never comes.
 */
function endWithStatus(
  call: ServerWritableStream<Buffer, Buffer>,
  code: StatusCode,
  details: string,
): void {
  const inner = (call as unknown as StatusSender).call;
  if (call.writableLength > 0 && inner !== undefined) {
    // Discard the backlog for real: a buffered frame written after the status
    // would be a write after end, which fails the stream with INTERNAL and
    // loses the trailers (the client then waits for the shutdown grace period
    // and sees CANCELLED).
    (call as unknown as { _write: BacklogWrite })._write = discardFrame;
    inner.sendStatus({ code, details, metadata: new GrpcMetadata() });
    return;
  }
  call.emit("error", serviceError(code, details));
}

/**
 * Wraps a unary handler.
 *
 * @param handler Takes the raw request bytes and the call context, returns response bytes.
 * @param options API version, method, metrics and log.
 * @returns A grpc-js unary handler.
 */
export function unary(
  handler: (request: Uint8Array, ctx: CallContext) => Promise<Uint8Array>,
  options: AdaptOptions,
): (call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>) => void {
  return (call, callback) => {
    const ctx: CallContext = {
      apiVersion: options.apiVersion,
      signal: callSignal(call),
      metadata: metadataReader(call.metadata),
    };
    let settled = false;
    const settle = (code: StatusCode, response?: Uint8Array, details = ""): void => {
      if (settled) return;
      settled = true;
      count(options, code);
      if (code === status.OK) callback(null, toBuffer(response!));
      else callback(serviceError(code, details));
    };
    call.on("cancelled", () => {
      if (settled) return;
      settled = true;
      count(options, deadlinePassed(call) ? status.DEADLINE_EXCEEDED : status.CANCELLED);
    });
    let pending: Promise<Uint8Array>;
    try {
      pending = handler(call.request, ctx);
    } catch (err) {
      pending = Promise.reject(err);
    }
    pending.then(
      (response) => settle(status.OK, response),
      (err: unknown) => {
        const outcome = toStatus(err);
        if (outcome.internalCause !== undefined) {
          options.log.error("request failed", {
            method: options.method,
            error: outcome.internalCause,
          });
        }
        settle(outcome.code, undefined, outcome.details);
      },
    );
  };
}

/**
 * Wraps a server-streaming handler.
 *
 * @param handler Takes the call context and a sink honouring backpressure.
 * @param options API version, method, metrics and log.
 * @returns A grpc-js server-streaming handler.
 */
export function serverStream(
  handler: (ctx: CallContext, sink: WatchSink) => Promise<void>,
  options: AdaptOptions,
): (call: ServerWritableStream<Buffer, Buffer>) => void {
  return (call) => {
    const signal = callSignal(call);
    const ctx: CallContext = {
      apiVersion: options.apiVersion,
      signal,
      metadata: metadataReader(call.metadata),
    };
    const sink: WatchSink = {
      send(frame) {
        if (signal.aborted) return Promise.resolve();
        if (call.write(toBuffer(frame))) return Promise.resolve();
        return new Promise<void>((resolve) => {
          const done = (): void => {
            call.off("drain", done);
            signal.removeEventListener("abort", done);
            resolve();
          };
          call.on("drain", done);
          signal.addEventListener("abort", done);
        });
      },
    };
    let ended = false;
    const end = (code: StatusCode, details: string): void => {
      if (ended) return;
      ended = true;
      count(options, code);
      if (code === status.OK) call.end();
      else if (!signal.aborted) endWithStatus(call, code, details);
    };
    call.on("cancelled", () => {
      end(deadlinePassed(call) ? status.DEADLINE_EXCEEDED : status.CANCELLED, "");
    });
    let pending: Promise<void>;
    try {
      pending = handler(ctx, sink);
    } catch (err) {
      pending = Promise.reject(err);
    }
    pending.then(
      () => end(status.OK, ""),
      (err: unknown) => {
        const outcome = toStatus(err);
        if (outcome.internalCause !== undefined) {
          options.log.error("watch failed", { error: outcome.internalCause });
        }
        end(outcome.code, outcome.details);
      },
    );
  };
}
