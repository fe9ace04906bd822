/**
 * One token bucket per client connection, so that a noisy client empties
 * only its own before it reaches the shared one. A gRPC connection is keyed
 * by its object (forgotten with it); an HTTP connection, which `Deno.serve`
 * names only by its remote address, by that address (the oldest forgotten
 * first beyond a bound).
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import { TokenBucket } from "../ratelimit/mod.ts";

/** Address-keyed buckets remembered at once. */
const MAX_KEYED_BUCKETS = 4096;

/** Options of {@linkcode ConnectionBuckets}. */
export interface ConnectionBucketsOptions {
  qps: number;
  burst: number;
  clock: Clock;
}

/** The buckets of the connections seen. */
export class ConnectionBuckets {
  #options: ConnectionBucketsOptions;
  #byObject = new WeakMap<object, TokenBucket>();
  #byKey = new Map<string, TokenBucket>();

  /**
   * @param options Rate and burst of each bucket, and the clock they refill from.
   * @throws {RangeError} When `qps` or `burst` cannot make a bucket.
   */
  constructor(options: ConnectionBucketsOptions) {
    // Checked now: a bad flag fails at start, not at the first call.
    new TokenBucket(options);
    this.#options = options;
  }

  /**
   * @param connection A connection object, or an address for HTTP.
   * @returns Whether the connection's bucket had a token (now taken).
   */
  tryTake(connection: object | string): boolean {
    return this.#bucketOf(connection).tryTake();
  }

  #bucketOf(connection: object | string): TokenBucket {
    if (typeof connection === "string") {
      let bucket = this.#byKey.get(connection);
      if (bucket === undefined) {
        bucket = new TokenBucket(this.#options);
        if (this.#byKey.size >= MAX_KEYED_BUCKETS) {
          this.#byKey.delete(this.#byKey.keys().next().value!);
        }
        this.#byKey.set(connection, bucket);
      }
      return bucket;
    }
    let bucket = this.#byObject.get(connection);
    if (bucket === undefined) {
      bucket = new TokenBucket(this.#options);
      this.#byObject.set(connection, bucket);
    }
    return bucket;
  }
}
