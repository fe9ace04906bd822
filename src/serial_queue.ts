/**
 * One task at a time, in the order queued: two reads of one source (or two
 * syncs of one runtime) never overlap.
 *
 * @module
 */

/**
 * Runs each task once the one before it has settled; a failed task does not
 * stop the ones after it.
 *
 * @example Usage
 * ```ts
 * import { SerialQueue } from "./serial_queue.ts";
 * const queue = new SerialQueue();
 * const order: number[] = [];
 * await Promise.all([1, 2].map((n) => queue.run(async () => void order.push(n))));
 * console.assert(order.join() === "1,2");
 * ```
 */
export class SerialQueue {
  #last: Promise<unknown> = Promise.resolve();
  #pending = 0;

  /**
   * Queues `task`; with none running or waiting it starts now, in this call.
   *
   * @param task The work; its errors reach only the returned promise.
   * @returns What `task` returns, once it has run.
   */
  run<T>(task: () => T | Promise<T>): Promise<T> {
    const run = this.#pending++ === 0
      ? new Promise<T>((resolve) => resolve(task()))
      : this.#last.then(task);
    const settled = () => void this.#pending--;
    this.#last = run.then(settled, settled);
    return run;
  }
}
