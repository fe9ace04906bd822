/**
 * The daemon's C allocator setting, one value for every way it starts that
 * can set the environment: the `start` and `demo` tasks (deno.json), the
 * image's `Env`, deploy/pods-api.service and deploy/base/daemonset.yaml
 * (tests/ship/malloc_env_test.ts checks each). The compiled binary cannot
 * set its own environment; the unit that runs it does.
 *
 * Why: glibc gives each thread that allocates its own arena, up to eight
 * per CPU, and an arena keeps what was freed in it. Under churn the
 * runtime's I/O threads and V8's helper threads each grow one, and the
 * daemon's RSS climbed with them. The soak's workload (300 pods, 50
 * changes/s, 50 watchers, the bundle as shipped): two daemons side by side
 * for 7 minutes peaked at 154 MB with 16 arenas (glibc's cap on 2 CPUs) and
 * at 149 MB with two; two 10-minute runs one after the other, at 164 and
 * 134 MB. Idle RSS does not change (RELIABILITY.md §6).
 *
 * @module
 */

/** The variables, as the environment takes them. */
export const DAEMON_MALLOC_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: "2" };

/**
 * @returns The variables as `NAME=value` entries (an image's `Env`, a shell prefix).
 */
export function mallocEnvEntries(): string[] {
  return Object.entries(DAEMON_MALLOC_ENV).map(([name, value]) => `${name}=${value}`);
}
