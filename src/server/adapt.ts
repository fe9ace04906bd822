/**
 * Bridges the transport's calls and the plain async handlers: the domain's
 * errors become statuses through one table (`errors.ts`), the cause of an
 * unexpected one goes to the log, and the request metrics of SPEC §10 are
 * counted once per call when it ends, cancels and deadlines included.
 *
 * @module
 */

import type { FramedMessage } from "../grpc/message_framing.ts";
import type { MethodHandler, ServerCall } from "../grpc/server.ts";
import { GrpcError } from "../grpc/status.ts";
import type { Logger } from "../log.ts";
import type { Metrics, ServerApiVersion } from "../metrics/metrics.ts";
import type { CallContext, WatchSink } from "./call_context.ts";
import { goCodeName, STATUS, type StatusCode, toStatus } from "./errors.ts";

/** Which request counter a method feeds. */
export type MethodKind = "list" | "get" | "watch";

/** Options shared by the adapters. */
export interface AdaptOptions {
  apiVersion: ServerApiVersion;
  method: MethodKind;
  metrics: Metrics;
  log: Logger;
}

function count(options: AdaptOptions, code: StatusCode, startedMs: number): void {
  if (options.method !== "watch") {
    options.metrics.requestDuration.observe(
      { "server_api_version": options.apiVersion, method: options.method },
      (performance.now() - startedMs) / 1000,
    );
  }
  const labels = { "server_api_version": options.apiVersion, "status_code": goCodeName(code) };
  options.metrics.requests.inc(labels);
  const byMethod = {
    list: options.metrics.requestsList,
    get: options.metrics.requestsGet,
    watch: options.metrics.requestsWatch,
  }[options.method];
  byMethod.inc(labels);
}

function contextOf(call: ServerCall, apiVersion: ServerApiVersion): CallContext {
  return {
    apiVersion,
    signal: call.signal,
    connection: call.connection,
    metadata: (key) => call.metadata(key),
  };
}

/**
 * Runs a handler and counts its outcome once: the status it ended with, or
 * CANCELLED / DEADLINE_EXCEEDED when the call was over before it was.
 */
async function settle<T>(
  call: ServerCall,
  options: AdaptOptions,
  run: () => Promise<T>,
): Promise<T> {
  const started = performance.now();
  try {
    const result = await run();
    count(options, call.signal.aborted ? abortCode(call.signal) : STATUS.OK, started);
    return result;
  } catch (err) {
    if (call.signal.aborted) {
      count(options, abortCode(call.signal), started);
      throw err;
    }
    const outcome = toStatus(err);
    if (outcome.internalCause !== undefined) {
      options.log.error("request failed", {
        method: options.method,
        error: outcome.internalCause,
      });
    }
    count(options, outcome.code, started);
    throw new GrpcError(outcome.code, outcome.details);
  }
}

function abortCode(signal: AbortSignal): StatusCode {
  return signal.reason instanceof GrpcError ? signal.reason.code : STATUS.CANCELLED;
}

/**
 * Wraps a unary handler.
 *
 * @param handler Takes the raw request bytes and the call context, returns response bytes.
 * @param options API version, method, metrics and log.
 * @returns The transport's unary method.
 */
export function unary(
  handler: (request: Uint8Array, ctx: CallContext) => Promise<Uint8Array | FramedMessage>,
  options: AdaptOptions,
): MethodHandler {
  return {
    kind: "unary",
    handle: (request, call) =>
      settle(call, options, () => handler(request, contextOf(call, options.apiVersion))),
  };
}

/**
 * Wraps a server-streaming handler.
 *
 * @param handler Takes the request bytes, the call context and a sink honouring backpressure.
 * @param options API version, method, metrics and log.
 * @returns The transport's server-streaming method.
 */
export function serverStream(
  handler: (request: Uint8Array, ctx: CallContext, sink: WatchSink) => Promise<void>,
  options: AdaptOptions,
): MethodHandler {
  return {
    kind: "serverStream",
    handle: (request, call, sink) =>
      settle(call, options, () => handler(request, contextOf(call, options.apiVersion), sink)),
  };
}
