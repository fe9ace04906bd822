/**
 * The timers of one HTTP/2 connection: the handshake deadline (the peer's
 * preface and first SETTINGS), the idle timeout (no stream for a while:
 * close gracefully) and keepalive PINGs (streams open but the peer silent:
 * PING it, and give up when the PING is not answered). One timer on the
 * connection's clock, armed for the nearest deadline.
 *
 * @module
 */

import type { CancelTimer, Clock } from "../clock.ts";
import type { ConnectionLimits } from "./connection_options.ts";

/** The payload of our keepalive PINGs ("keepaliv"). */
export const KEEPALIVE_PING = new Uint8Array([0x6b, 0x65, 0x65, 0x70, 0x61, 0x6c, 0x69, 0x76]);

/**
 * A deadline that passed: no preface and SETTINGS in time, no stream for
 * `idleTimeoutMs`, time to PING a silent peer, or a keepalive PING that
 * went unanswered for `keepaliveTimeoutMs`.
 */
export type Deadline = "handshake" | "idle" | "ping" | "unanswered";

/** The timers of one connection. */
export class Keepalive {
  readonly #expired: (deadline: Deadline) => void;
  readonly #limits: ConnectionLimits;
  readonly #clock: Clock;
  /** When the handshake must be done by; `Infinity` once it is (or with no limit). */
  #handshakeBy: number;
  #lastActivity: number;
  #idleSince: number;
  #pingSentAt: number | undefined;
  #cancel: CancelTimer | undefined;
  /** When the armed timer fires; `Infinity` when none is armed. */
  #armedFor = Infinity;
  #stopped = false;

  /**
   * @param limits The handshake, idle and keepalive periods.
   * @param clock Reads the time and holds the timer.
   * @param expired Acts on a deadline that passed.
   */
  constructor(limits: ConnectionLimits, clock: Clock, expired: (deadline: Deadline) => void) {
    this.#expired = expired;
    this.#limits = limits;
    this.#clock = clock;
    this.#lastActivity = this.#idleSince = clock.now();
    this.#handshakeBy = limits.handshakeTimeoutMs > 0
      ? this.#lastActivity + limits.handshakeTimeoutMs
      : Infinity;
  }

  /** Arms the timer for the first deadline (when any period is set). */
  start(): void {
    this.#check();
  }

  /** Stops the timer for good. */
  stop(): void {
    this.#stopped = true;
    this.#cancel?.();
    this.#cancel = undefined;
    this.#armedFor = Infinity;
  }

  /** The peer's first SETTINGS arrived: the handshake is done. */
  settled(): void {
    this.#handshakeBy = Infinity;
  }

  /** Bytes arrived from the peer. */
  received(): void {
    this.#lastActivity = this.#clock.now();
  }

  /** A stream opened: the connection is not idle, and a silent peer is PINGed. */
  busy(): void {
    this.#idleSince = Infinity;
    const limits = this.#limits;
    if (limits.keepaliveMs > 0 && this.#pingSentAt === undefined) {
      this.#arm(this.#lastActivity + limits.keepaliveMs);
    }
  }

  /** The last stream closed: the idle period starts now. */
  quiet(): void {
    this.#idleSince = this.#clock.now();
    if (this.#limits.idleTimeoutMs > 0) this.#arm(this.#idleSince + this.#limits.idleTimeoutMs);
  }

  /** The peer answered a PING: no keepalive PING is outstanding. */
  pingAnswered(): void {
    this.#pingSentAt = undefined;
  }

  /**
   * Arms the timer for `at` unless it fires by then already. A deadline that
   * moved later (activity, a stream) is found when the timer fires early and
   * rearms: reads never touch the timer.
   */
  #arm(at: number): void {
    if (this.#stopped || at >= this.#armedFor) return;
    this.#cancel?.();
    this.#armedFor = at;
    this.#cancel = this.#clock.setTimer(at - this.#clock.now(), () => {
      this.#cancel = undefined;
      this.#armedFor = Infinity;
      this.#check();
    });
  }

  /** Acts on every deadline that passed, then arms the timer for the next one. */
  #check(): void {
    if (this.#stopped) return;
    const now = this.#clock.now();
    const limits = this.#limits;
    if (now >= this.#handshakeBy) return this.#expired("handshake");
    let next = this.#handshakeBy;
    if (limits.idleTimeoutMs > 0 && this.#idleSince !== Infinity) {
      const at = this.#idleSince + limits.idleTimeoutMs;
      if (now >= at) return this.#expired("idle");
      next = Math.min(next, at);
    }
    // Streams are open exactly while the connection is not idle.
    if (limits.keepaliveMs > 0 && this.#idleSince === Infinity) {
      if (this.#pingSentAt !== undefined) {
        const at = this.#pingSentAt + limits.keepaliveTimeoutMs;
        if (now >= at) return this.#expired("unanswered");
        next = Math.min(next, at);
      } else if (now >= this.#lastActivity + limits.keepaliveMs) {
        this.#pingSentAt = now;
        this.#expired("ping");
        next = Math.min(next, now + limits.keepaliveTimeoutMs);
      } else {
        next = Math.min(next, this.#lastActivity + limits.keepaliveMs);
      }
    }
    if (next !== Infinity) this.#arm(next);
  }
}
