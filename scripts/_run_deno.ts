/**
 * Runs the `deno` child processes of the build scripts (private to
 * `bundle.ts` and `compile.ts`).
 *
 * @module
 */

import { ROOT_DIR } from "./stamp_version.ts";

/** What one `deno` child returns. */
export interface DenoRunResult {
  /** The child's exit code. */
  readonly code: number;
  /** The child's standard error (its progress lines, or its error). */
  readonly stderr: string;
}

/**
 * Runs `deno <args>` (this very Deno) in the repository root with this
 * process's environment, `DENORT_BIN`, `DENO_DIR` and proxies included.
 *
 * @param args The `deno` arguments, e.g. `["bundle", ...]`.
 * @returns The child's exit code and standard error.
 */
export async function runDeno(args: readonly string[]): Promise<DenoRunResult> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [...args],
    cwd: ROOT_DIR,
    stdin: "null",
    stdout: "inherit",
    stderr: "piped",
  }).spawn();
  const [stderr, status] = await Promise.all([new Response(child.stderr).text(), child.status]);
  return { code: status.code, stderr };
}

/**
 * Strips colours and Rust's `Stack backtrace:` block from Deno's output.
 *
 * @param stderr Deno's standard error.
 * @returns The text without escapes and without the backtrace.
 */
export function cleanDenoOutput(stderr: string): string {
  // deno-lint-ignore no-control-regex
  const plain = stderr.replace(/\x1b\[[0-9;]*m/g, "");
  const cut = plain.indexOf("Stack backtrace:");
  return (cut === -1 ? plain : plain.slice(0, cut)).trimEnd();
}
