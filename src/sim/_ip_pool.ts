/**
 * Pod IP allocation from the node's slice of the 10.244.0.0/16 pod network
 * (the flannel/kubeadm default): one /24 per node first, then onward.
 *
 * @module
 */

/** Hands out unique pod IPs and takes them back when a pod goes away. */
export class IpPool {
  #next: number;
  #inUse = new Set<number>();

  /** @param block The third octet to start from (0 to 255). */
  constructor(block: number) {
    this.#next = (block & 0xff) * 256 + 2;
  }

  /**
   * @returns A free address like `10.244.3.17`.
   * @throws {RangeError} When every address is taken.
   */
  allocate(): string {
    for (let tries = 0; tries < 65536; tries++) {
      const candidate = this.#next;
      this.#next = (this.#next + 1) % 65536;
      const host = candidate & 0xff;
      if (host < 2 || host === 255 || this.#inUse.has(candidate)) continue;
      this.#inUse.add(candidate);
      return `10.244.${candidate >> 8}.${host}`;
    }
    throw new RangeError("Cannot allocate a pod IP: the pool is exhausted");
  }

  /** Returns an address to the pool (ignores addresses it did not hand out). */
  release(ip: string): void {
    const parts = ip.split(".");
    if (parts.length !== 4 || parts[0] !== "10" || parts[1] !== "244") return;
    this.#inUse.delete(Number(parts[2]) * 256 + Number(parts[3]));
  }
}
