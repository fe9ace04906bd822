/**
 * How a client subcommand meets the person who ran it: where it writes and
 * what it reads from its surroundings, its exit codes, and the one line it
 * writes for an error.
 *
 * @module
 */

import { GrpcError, STATUS } from "../grpc/status.ts";
import { PodsApiConnectError } from "./connect_error.ts";
import { RateLimitedError } from "./pods_client.ts";

/** Where the CLI writes and what it reads from its surroundings. */
export interface CliIo {
  /** Writes a line (the newline is added). */
  out(text: string): void;
  /** Writes text as it is, for output that ends where the user's template ends (`-o jsonpath`). */
  write(text: string): void;
  err(text: string): void;
  /** Current time, ms since the epoch. */
  now(): number;
  /** Aborted on Ctrl-C (ends `watch`). */
  signal: AbortSignal;
  /** Reads an environment variable (`PODS_API_SOCKET`). */
  env(name: string): string | undefined;
}

/** Exit codes of the client subcommands. */
export const CLIENT_EXIT = { ok: 0, failure: 1, usage: 2 } as const;

/**
 * One line a person can act on, for any error a client command meets.
 *
 * @param err The error.
 * @returns The message.
 */
export function describeError(err: unknown): string {
  if (err instanceof RateLimitedError) {
    return `Rate limited by the daemon: still refused after ${err.attempts} attempts with backoff (${err.message}); too many List/Get calls reach this node: try again, or raise the daemon's --rate-limit-qps and --rate-limit-burst`;
  }
  if (err instanceof GrpcError) {
    switch (err.code) {
      case STATUS.FAILED_PRECONDITION:
        return `The daemon is still syncing (${err.message}): it answers once its first read of every pod source is done; try again in a few seconds`;
      case STATUS.NOT_FOUND:
        return `Not found: ${err.message}`;
      case STATUS.INVALID_ARGUMENT:
        return `The daemon refused the request: ${err.message}`;
      case STATUS.UNAVAILABLE:
        return `Lost the daemon (${err.message}): it may be restarting; try again`;
      case STATUS.DEADLINE_EXCEEDED:
        return `The daemon did not answer in time (${err.message})`;
      case STATUS.UNIMPLEMENTED:
        return `The server does not offer this call (${err.message}): is --socket a pods-api or kubelet Pods API socket?`;
      default:
        return err.message;
    }
  }
  if (err instanceof PodsApiConnectError) return err.message;
  if (err instanceof Deno.errors.NotCapable) {
    return `Not permitted: ${err.message.replace(/, run again with.*$/s, "")}`;
  }
  return (err as Error).message ?? String(err);
}
