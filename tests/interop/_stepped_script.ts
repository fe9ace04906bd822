/**
 * A peer script driven step by step: it prints one JSON report per line,
 * each naming its `step`, and waits for "go" on stdin before the next part
 * (so the test can change the node between steps). Used by the Python
 * clients of the PodQuery and Kubernetes-compatible surfaces.
 *
 * @module
 */

import assert from "node:assert/strict";

/** A running stepped script. */
export interface SteppedScript extends AsyncDisposable {
  /**
   * Reads the next report and checks it is `name`.
   *
   * @param name The step the script should report.
   * @returns The report.
   */
  // deno-lint-ignore no-explicit-any
  step(name: string): Promise<any>;
  /** Lets the script go on to its next step. */
  go(): Promise<void>;
}

/**
 * Starts `cmd args`; disposing it closes stdin, waits for the exit and
 * fails when the script did not exit 0 (its stderr is the message).
 *
 * @param cmd The program.
 * @param args Its arguments.
 * @returns The script.
 */
export function startSteppedScript(cmd: string, args: string[]): SteppedScript {
  const child = new Deno.Command(cmd, {
    args,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const stdin = child.stdin.getWriter();
  const stderr = new Response(child.stderr).text();
  let buffered = "";
  return {
    async step(name) {
      while (!buffered.includes("\n")) {
        const { value, done } = await lines.read();
        if (done) throw new Error(`the script ended before "${name}": ${await stderr}`);
        buffered += value;
      }
      const at = buffered.indexOf("\n");
      const report = JSON.parse(buffered.slice(0, at));
      buffered = buffered.slice(at + 1);
      assert.equal(report.step, name);
      return report;
    },
    go: () => stdin.write(new TextEncoder().encode("go\n")),
    async [Symbol.asyncDispose]() {
      await stdin.close().catch(() => {});
      const status = await child.status;
      await lines.cancel().catch(() => {});
      const err = await stderr;
      assert.ok(status.success, err);
    },
  };
}
