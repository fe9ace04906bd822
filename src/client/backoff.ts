/**
 * The client's retry delays: {@linkcode Backoff} lives in `src/backoff.ts`
 * (the API server source backs off with it too).
 *
 * @module
 */

export { Backoff, type BackoffOptions } from "../backoff.ts";
