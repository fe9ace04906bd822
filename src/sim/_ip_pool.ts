/**
 * Pod IP allocation from a /16 (the simulated node's slice of 10.244.0.0/16,
 * the flannel/kubeadm default; the simulated runtime's 10.88.0.0/16, the
 * containerd CNI default): unique addresses, given back when a pod goes.
 *
 * @module
 */

/** Options of {@linkcode IpPool}. */
export interface IpPoolOptions {
  /** The first two octets, e.g. `"10.244"`. */
  readonly prefix: string;
  /** The third octet to start from (0 to 255): a node's own /24 first. @default {0} */
  readonly block?: number;
}

/**
 * Hands out unique pod IPs and takes them back when a pod goes away.
 *
 * @example Usage
 * ```ts
 * import { IpPool } from "./_ip_pool.ts";
 * const pool = new IpPool({ prefix: "10.244", block: 3 });
 * pool.allocate(); // "10.244.3.2"
 * ```
 */
export class IpPool {
  readonly #prefix: string;
  #next: number;
  #inUse = new Set<number>();

  /** @param options The /16 prefix and the block to start from. */
  constructor(options: IpPoolOptions) {
    this.#prefix = options.prefix;
    this.#next = ((options.block ?? 0) & 0xff) * 256 + 2;
  }

  /**
   * @returns A free address like `10.244.3.17` (never `.0`, `.1` or `.255`).
   * @throws {RangeError} When every address is taken.
   */
  allocate(): string {
    for (let tries = 0; tries < 65536; tries++) {
      const candidate = this.#next;
      this.#next = (this.#next + 1) % 65536;
      const host = candidate & 0xff;
      if (host < 2 || host === 255 || this.#inUse.has(candidate)) continue;
      this.#inUse.add(candidate);
      return `${this.#prefix}.${candidate >> 8}.${host}`;
    }
    throw new RangeError("Cannot allocate a pod IP: the pool is exhausted");
  }

  /** Returns an address to the pool (ignores addresses it did not hand out). */
  release(ip: string): void {
    if (!ip.startsWith(`${this.#prefix}.`)) return;
    const parts = ip.split(".");
    if (parts.length !== 4) return;
    this.#inUse.delete(Number(parts[2]) * 256 + Number(parts[3]));
  }
}
