/**
 * The HTTP/1.1 server of the daemon's TCP listeners: bounded, timed, and
 * never ended by an accept error.
 *
 * @module
 */

export {
  type Deadline,
  type Http1Handler,
  type Http1Observer,
  type Http1ServerOptions,
  type Http1Timeouts,
  type RequestInfo,
  type RunningHttp1Server,
  serveHttp1,
  streamingResponse,
} from "./server.ts";
export { textResponse } from "./text_body.ts";
