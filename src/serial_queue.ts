/**
 * One task at a time: each queued task starts once the one before it has
 * settled, so two reads of one source (or two syncs of one runtime) never
 * overlap and finish in the order they were asked for.
 *
 * @module
 */

/**
 * Runs tasks one after the other, in the order they were queued. A task that
 * fails does not stop the ones after it.
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
  /** Settles when the last task queued has settled. */
  #last: Promise<unknown> = Promise.resolve();
  /** Tasks running or waiting. */
  #pending = 0;

  /**
   * Queues `task`. With none running or waiting it starts now, in this call.
   *
   * @param task The work; its errors reach only the returned promise.
   * @returns What `task` returns, once it has run.
   */
  run<T>(task: () => T | Promise<T>): Promise<T> {
    const idle = this.#pending === 0;
    this.#pending++;
    const run = idle ? new Promise<T>((resolve) => resolve(task())) : this.#last.then(task);
    const settled = () => {
      this.#pending--;
    };
    this.#last = run.then(settled, settled);
    return run;
  }
}
