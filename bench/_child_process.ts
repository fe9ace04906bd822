/**
 * The child processes of the benchmark harnesses: started with their stderr
 * in a log file and their stdout read line by line, stopped with a grace
 * period, or run to the end for their output. Shared by every `bench/*run.ts`
 * and bench/_daemon_alone.ts.
 *
 * @module
 */

const ROOT = new URL("../", import.meta.url).pathname;

/** The permissions the harnesses run the daemon's scripts with. */
export const PERMS: readonly string[] = [
  "--allow-read",
  "--allow-write",
  "--allow-net",
  "--allow-env",
  "--allow-sys",
];

/** A process started by {@linkcode spawnProc}. */
export interface Proc {
  readonly pid: number;
  readonly child: Deno.ChildProcess;
  /** Every stdout line so far. */
  readonly lines: string[];
  /** Resolves to its first stdout line ("" if it exits first). */
  readonly firstLine: Promise<string>;
  /** Resolves once its stdout has ended. */
  readonly done: Promise<void>;
}

/**
 * Waits `ms` of real time: the harnesses pace real processes.
 *
 * @param ms How long.
 * @returns Resolves when the time is up.
 */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * Spawns a command in the repository root, its stdout read line by line,
 * its stderr to a file.
 *
 * @param cmd The program.
 * @param args Its arguments.
 * @param logPath Where its stderr goes.
 * @param cpu Pins it to this CPU with `taskset`, when given.
 * @returns The process.
 */
export function spawnProc(cmd: string, args: string[], logPath: string, cpu?: number): Proc {
  // The shell sends stderr straight to the file and then becomes the
  // program (same pid): a stream piped through this process was seen to
  // reach the file only when the child exited.
  const pinned = cpu === undefined ? [cmd, ...args] : ["taskset", "-c", String(cpu), cmd, ...args];
  const child = new Deno.Command("sh", {
    args: ["-c", 'exec "$@" 2>"$0"', logPath, ...pinned],
    cwd: ROOT,
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const lines: string[] = [];
  const first = Promise.withResolvers<string>();
  // Read to the end, so the child never blocks on a full pipe.
  const done = (async () => {
    let text = "";
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      text += chunk;
      let nl;
      while ((nl = text.indexOf("\n")) >= 0) {
        lines.push(text.slice(0, nl));
        if (lines.length === 1) first.resolve(lines[0]!);
        text = text.slice(nl + 1);
      }
    }
  })().catch(() => {}).finally(() => first.resolve(""));
  return { pid: child.pid, child, lines, firstLine: first.promise, done };
}

/**
 * Stops a process with SIGTERM (SIGKILL after 15 s) and waits for it and
 * its stdout.
 *
 * @param proc The process.
 */
export async function stopProc(proc: Proc): Promise<void> {
  try {
    proc.child.kill("SIGTERM");
  } catch { /* gone */ }
  const timer = setTimeout(() => {
    try {
      proc.child.kill("SIGKILL");
    } catch { /* gone */ }
  }, 15_000);
  await proc.child.status;
  await proc.done;
  clearTimeout(timer);
}

/**
 * Runs a command in the repository root to its end.
 *
 * @param cmd The program.
 * @param args Its arguments.
 * @param timeoutMs Killed after this long. @default {300_000}
 * @returns Its stdout.
 * @throws {Error} When it fails, with the end of its stderr.
 */
export async function runCommand(
  cmd: string,
  args: string[],
  timeoutMs = 300_000,
): Promise<string> {
  const child = new Deno.Command(cmd, { args, cwd: ROOT, stdout: "piped", stderr: "piped" })
    .spawn();
  const timer = setTimeout(() => {
    try {
      child.kill("SIGKILL");
    } catch { /* gone */ }
  }, timeoutMs);
  const out = await child.output();
  clearTimeout(timer);
  if (!out.success) {
    throw new Error(
      `${cmd} ${args.join(" ")} failed: ${new TextDecoder().decode(out.stderr).slice(-2000)}`,
    );
  }
  return new TextDecoder().decode(out.stdout);
}
