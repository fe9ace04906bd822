/**
 * The timers of one HTTP/2 connection: the handshake deadline (the peer's
 * preface and first SETTINGS), the idle timeout (no stream for a while:
 * close gracefully) and keepalive PINGs (streams open but the peer silent:
 * PING it, and give up when the PING is not answered). One timer checks all
 * three at a quarter of the shortest period.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import type { ConnectionLimits } from "./connection_options.ts";

/** The payload of our keepalive PINGs ("keepaliv"). */
export const KEEPALIVE_PING = new Uint8Array([0x6b, 0x65, 0x65, 0x70, 0x61, 0x6c, 0x69, 0x76]);

/** What the timers read of their connection and what they make it do. */
export interface KeepaliveHost {
  /** @returns Whether the peer's first SETTINGS has arrived. */
  settingsSeen(): boolean;
  /** @returns Streams open now. */
  streamCount(): number;
  /** @returns Whether the connection is closed (the timers stop). */
  closed(): boolean;
  /** No preface and SETTINGS in time. */
  handshakeTimedOut(): void;
  /** No stream for `idleTimeoutMs`. */
  idle(): void;
  /** A keepalive PING went unanswered for `keepaliveTimeoutMs`. */
  pingUnanswered(): void;
  /** Sends a keepalive PING. */
  sendPing(payload: Uint8Array): void;
}

/** The timers of one connection. */
export class Keepalive {
  readonly #host: KeepaliveHost;
  readonly #limits: ConnectionLimits;
  readonly #clock: Clock;
  readonly #startedAt: number;
  #lastActivity: number;
  #idleSince: number;
  #pingSentAt: number | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;

  /**
   * @param host The connection.
   * @param limits Its handshake, idle and keepalive periods.
   * @param clock Reads the time.
   */
  constructor(host: KeepaliveHost, limits: ConnectionLimits, clock: Clock) {
    this.#host = host;
    this.#limits = limits;
    this.#clock = clock;
    this.#startedAt = this.#lastActivity = this.#idleSince = clock.now();
  }

  /** Starts the timer (when any period is set). */
  start(): void {
    const periods = [
      this.#limits.handshakeTimeoutMs,
      this.#limits.idleTimeoutMs,
      this.#limits.keepaliveMs,
    ].filter((ms) => ms > 0);
    if (periods.length === 0) return;
    const every = Math.max(100, Math.min(...periods) / 4);
    this.#timer = setTimeout(() => this.#tick(every), every);
  }

  /** Stops the timer. */
  stop(): void {
    clearTimeout(this.#timer);
  }

  /** Bytes arrived from the peer. */
  received(): void {
    this.#lastActivity = this.#clock.now();
  }

  /** A stream opened: the connection is not idle. */
  busy(): void {
    this.#idleSince = Infinity;
  }

  /** The last stream closed: the idle period starts now. */
  quiet(): void {
    this.#idleSince = this.#clock.now();
  }

  /** The peer answered a PING: no keepalive PING is outstanding. */
  pingAnswered(): void {
    this.#pingSentAt = undefined;
  }

  #tick(every: number): void {
    const host = this.#host;
    if (host.closed()) return;
    const now = this.#clock.now();
    const l = this.#limits;
    if (
      !host.settingsSeen() && l.handshakeTimeoutMs > 0 &&
      now - this.#startedAt >= l.handshakeTimeoutMs
    ) {
      host.handshakeTimedOut();
    } else if (l.idleTimeoutMs > 0 && now - this.#idleSince >= l.idleTimeoutMs) {
      host.idle();
    } else if (l.keepaliveMs > 0 && host.streamCount() > 0) {
      if (this.#pingSentAt !== undefined && now - this.#pingSentAt >= l.keepaliveTimeoutMs) {
        host.pingUnanswered();
      } else if (this.#pingSentAt === undefined && now - this.#lastActivity >= l.keepaliveMs) {
        this.#pingSentAt = now;
        host.sendPing(KEEPALIVE_PING);
      }
    }
    if (!host.closed()) this.#timer = setTimeout(() => this.#tick(every), every);
  }
}
