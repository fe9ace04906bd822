/**
 * What the benchmarks read of a process from /proc: resident memory, CPU
 * time, and the peak RSS over a phase. Read with `cat` so that the benches
 * need no read permission on /proc.
 *
 * @module
 */

/** Clock ticks per second on Linux (USER_HZ = 100): 10 ms a tick. */
const CLOCK_TICK_MS = 10;

/**
 * @param path A /proc file.
 * @returns Its text, or "" when it cannot be read.
 */
export async function readProc(path: string): Promise<string> {
  const out = await new Deno.Command("cat", { args: [path], stderr: "null" }).output();
  return new TextDecoder().decode(out.stdout);
}

/**
 * @param pid A process id.
 * @returns Its resident memory in MB, or NaN once it is gone.
 */
export async function rssMb(pid: number): Promise<number> {
  const m = /VmRSS:\s+(\d+) kB/.exec(await readProc(`/proc/${pid}/status`));
  return m ? Number(m[1]) / 1024 : NaN;
}

/** The machine's CPU time so far, all CPUs together: all of it, and what the hypervisor took. */
export interface MachineCpu {
  /** Every state /proc/stat counts (user, system, idle, iowait, steal...), ms. */
  readonly totalMs: number;
  /** Time a virtual CPU was ready to run and the host ran something else, ms. */
  readonly stealMs: number;
}

/** @returns The machine's CPU time so far (the `cpu` line of /proc/stat). */
export async function machineCpu(): Promise<MachineCpu> {
  const line = (await readProc("/proc/stat")).split("\n")[0] ?? "";
  const ticks = line.trim().split(/\s+/).slice(1, 9).map(Number);
  const total = ticks.reduce((a, b) => a + (Number.isFinite(b) ? b : 0), 0);
  return { totalMs: total * CLOCK_TICK_MS, stealMs: (ticks[7] ?? 0) * CLOCK_TICK_MS };
}

/**
 * @param before The machine's CPU time at the start.
 * @param after At the end.
 * @returns The share of the machine's CPU time the hypervisor took in between, percent.
 */
export function stolenPercent(before: MachineCpu, after: MachineCpu): number {
  const total = after.totalMs - before.totalMs;
  return total > 0 ? 100 * (after.stealMs - before.stealMs) / total : 0;
}

/**
 * @param pid A process id.
 * @returns Its user + system CPU time so far, ms.
 */
export async function cpuMs(pid: number): Promise<number> {
  const stat = await readProc(`/proc/${pid}/stat`);
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * CLOCK_TICK_MS;
}

/**
 * Samples a process's RSS every 100 ms until stopped.
 *
 * @param pid A process id.
 * @returns `stop()`, which resolves to the peak seen (MB).
 */
export function rssSampler(pid: number): { stop(): Promise<number> } {
  let peak = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const rss = await rssMb(pid);
      if (!Number.isNaN(rss)) peak = Math.max(peak, rss);
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return peak;
    },
  };
}
