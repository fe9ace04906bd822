/**
 * Why the serving core refused a call before serving it, and the words the
 * client reads. Each surface maps a {@linkcode Refusal} to its own status:
 * a gRPC code (`server/errors.ts`) or an HTTP code with a `Status` body
 * (`kubeapi/`).
 *
 * @module
 */

/**
 * `shutting_down`: the daemon is stopping; `not_synced`: a pod source has not
 * completed its first read (DESIGN.md §7); `rate_limited`: a token bucket is empty
 * (DESIGN.md §8); `too_many_watchers`: every watch slot is taken (`--max-watchers`).
 */
export type RefusalReason = "shutting_down" | "not_synced" | "rate_limited" | "too_many_watchers";

/** The message of each refusal (DESIGN.md §9), the same on every surface. */
export const REFUSAL_MESSAGES: Readonly<Record<RefusalReason, string>> = Object.freeze({
  "shutting_down": "server is shutting down",
  "not_synced": "pod sources are still initializing",
  "rate_limited": "rejected by rate limit",
  "too_many_watchers": "too many concurrent watch streams",
});

/** A call the serving core would not admit. */
export class Refusal extends Error {
  /** Why. */
  readonly reason: RefusalReason;

  /** @param reason Why the call was refused; the message follows from it. */
  constructor(reason: RefusalReason) {
    super(REFUSAL_MESSAGES[reason]);
    this.name = "Refusal";
    this.reason = reason;
  }
}
