/**
 * The query engine's domain errors. `src/server/errors.ts` maps them to gRPC
 * status codes and the HTTP surface to API server `Status` objects.
 *
 * @module
 */

/** A label or field selector that does not parse; `token` is the offending part. */
export class SelectorError extends SyntaxError {
  /** The token the parser stopped at (or the unsupported field). */
  readonly token: string;

  /**
   * @param message Sentence-case message naming the token.
   * @param token The offending token.
   */
  constructor(message: string, token: string) {
    super(message);
    this.name = "SelectorError";
    this.token = token;
  }
}

/** Why a resume token cannot be used. */
export type ResumeTokenProblem = "expired" | "malformed";

/**
 * A resume token that is malformed, or names a position this daemon no
 * longer (or never) held: the API server's 410 Gone.
 */
export class ResumeTokenError extends RangeError {
  /** `expired`: list again; `malformed`: not a token of ours at all. */
  readonly problem: ResumeTokenProblem;

  /**
   * @param problem What is wrong with the token.
   * @param message The message a client sees.
   */
  constructor(problem: ResumeTokenProblem, message: string) {
    super(message);
    this.name = "ResumeTokenError";
    this.problem = problem;
  }
}

/** The message of an expired token (DESIGN.md §14). */
export const TOKEN_TOO_OLD = "resume token too old; list again";

/** A lookup key that cannot name one pod: a short or ambiguous prefix, a malformed IP. */
export class LookupError extends TypeError {
  /**
   * @param message The message a client sees, naming the key.
   */
  constructor(message: string) {
    super(message);
    this.name = "LookupError";
  }
}

/** A watcher that fell too far behind and was dropped (its queue overflowed). */
export class WatchDroppedError extends Error {
  /** Events it lost. */
  readonly lost: number;

  /** @param lost Events discarded with the watcher. */
  constructor(lost: number) {
    super("watch client too slow, dropped");
    this.name = "WatchDroppedError";
    this.lost = lost;
  }
}
