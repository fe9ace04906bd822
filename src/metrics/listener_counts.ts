/**
 * A listener's accept loop and deadlines, counted: the observer every
 * listener of the daemon reports through.
 *
 * @module
 */

import type { Http1Observer } from "../http1/mod.ts";
import type { ListenerName, Metrics } from "./metrics.ts";

/**
 * The observer of one listener, counting into the daemon's metrics.
 *
 * @param metrics The daemon's metrics.
 * @param listener The listener's name.
 * @returns Its observer.
 */
export function listenerCounts(metrics: Metrics, listener: ListenerName): Http1Observer {
  return {
    refused: (reason) => metrics.connectionsRefused.inc({ listener, reason }),
    acceptFailed: (code) => metrics.acceptErrors.inc({ listener, code }),
    timedOut: (deadline) => metrics.connectionsTimedOut.inc({ listener, deadline }),
  };
}
