/**
 * Bridges the transport's calls and the plain async handlers: the domain's
 * errors become statuses through one table (`errors.ts`), the cause of an
 * unexpected one goes to the log, and the request metrics of DESIGN.md §10 are
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

/** The counters one call's outcome adds to. */
interface OutcomeCounters {
  readonly requests: { inc(): void };
  readonly byMethod: { inc(): void };
}

/**
 * What one method counts into, each child looked up once: a call then
 * builds no label key and allocates no label object of its own.
 */
class MethodCounters {
  readonly #options: AdaptOptions;
  readonly #duration: { observe(value: number): void } | undefined;
  readonly #byMethod: Metrics["requestsList"];
  readonly #byCode = new Map<StatusCode, OutcomeCounters>();

  constructor(options: AdaptOptions) {
    this.#options = options;
    this.#duration = options.method === "watch" ? undefined : options.metrics.requestDuration
      .labels({ "server_api_version": options.apiVersion, method: options.method });
    this.#byMethod = {
      list: options.metrics.requestsList,
      get: options.metrics.requestsGet,
      watch: options.metrics.requestsWatch,
    }[options.method];
  }

  count(code: StatusCode, startedMs: number): void {
    this.#duration?.observe((performance.now() - startedMs) / 1000);
    let counters = this.#byCode.get(code);
    if (counters === undefined) {
      const labels = {
        "server_api_version": this.#options.apiVersion,
        "status_code": goCodeName(code),
      };
      counters = {
        requests: this.#options.metrics.requests.labels(labels),
        byMethod: this.#byMethod.labels(labels),
      };
      this.#byCode.set(code, counters);
    }
    counters.requests.inc();
    counters.byMethod.inc();
  }
}

/** The handler's view of a call; the signal is made only when a handler reads it. */
class CallContextOf implements CallContext {
  readonly apiVersion: ServerApiVersion;
  readonly #call: ServerCall;

  constructor(call: ServerCall, apiVersion: ServerApiVersion) {
    this.apiVersion = apiVersion;
    this.#call = call;
  }

  get signal(): AbortSignal {
    return this.#call.signal;
  }

  get connection(): object {
    return this.#call.connection;
  }

  metadata(key: string): readonly (string | Uint8Array)[] {
    return this.#call.metadata(key);
  }
}

/**
 * Runs a handler and counts its outcome once: the status it ended with, or
 * CANCELLED / DEADLINE_EXCEEDED when the call was over before it was.
 */
async function settle<T>(
  call: ServerCall,
  options: AdaptOptions,
  counters: MethodCounters,
  run: () => Promise<T>,
): Promise<T> {
  const started = performance.now();
  try {
    const result = await run();
    counters.count(call.aborted ? abortCode(call.signal) : STATUS.OK, started);
    return result;
  } catch (err) {
    if (call.aborted) {
      counters.count(abortCode(call.signal), started);
      throw err;
    }
    const outcome = toStatus(err);
    if (outcome.internalCause !== undefined) {
      options.log.error("request failed", {
        method: options.method,
        error: outcome.internalCause,
      });
    }
    counters.count(outcome.code, started);
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
  const counters = new MethodCounters(options);
  return {
    kind: "unary",
    handle: (request, call) =>
      settle(
        call,
        options,
        counters,
        () => handler(request, new CallContextOf(call, options.apiVersion)),
      ),
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
  const counters = new MethodCounters(options);
  return {
    kind: "serverStream",
    handle: (request, call, sink) =>
      settle(
        call,
        options,
        counters,
        () => handler(request, new CallContextOf(call, options.apiVersion), sink),
      ),
  };
}
