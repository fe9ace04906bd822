/**
 * Removes a test's temporary tree on the main thread, never on Deno's
 * blocking pool, because of a descriptor double close in Deno 2.9.3.
 *
 * Deno 2.9.3 closes the descriptor of every `node:net` UNIX socket twice
 * when it is closed (the Tokio stream's drop, then `close()` on the same
 * number: `libs/core/uv_compat/pipe.rs`, `close_pipe`; fixed upstream by
 * denoland/deno#36353, in no 2.9.x release). Every grpc-js `unix:` client of
 * a test process goes through it. When another thread opens a descriptor
 * between the two closes it gets the same number and the second close takes
 * it away. `Deno.remove(dir, { recursive: true })` walks the tree on the
 * blocking pool with directory streams; a stolen one aborts the whole process
 * (`unexpected error during closedir: ... Bad file descriptor`), as one CI
 * run did in `tests/reliability/faults_test.ts`. Both closes run on the main
 * thread back to back, so a removal on the main thread cannot fall between
 * them. RELIABILITY.md, "Known runtime issue", has the evidence.
 *
 * @module
 */

/**
 * Removes `path` and everything under it, synchronously. Clean-up only:
 * errors are ignored, so a test's clean-up never hides its result.
 *
 * @param path A temporary directory of the test.
 */
export function removeTree(path: string): void {
  try {
    Deno.removeSync(path, { recursive: true });
  } catch {
    // Already gone, or not ours to remove: clean-up must not fail the test.
  }
}
