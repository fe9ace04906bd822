/**
 * The V8 sizing of the daemon, one list for every way it starts: the
 * `start` and `demo` tasks (deno.json), the bundle's run command and so the
 * image's entrypoint (`_permissions.ts`), the compiled binary (`compile.ts`
 * embeds them), and `DENO_V8_FLAGS` in deploy/pods-api.service and
 * deploy/daemonset.yaml. tests/ship/v8_flags_test.ts checks that each
 * carries exactly these.
 *
 * Why: V8's defaults are a browser tab's. Its young generation grows to
 * 2 x 16 MB semi-spaces (64 MB of new space was reserved for 9 MB used with
 * 1000 pods; under a burst of ListPods it fills before a scavenge), which a
 * node agent holding a few MB of short-lived garbage pays for in RSS. The
 * first round took 1 MB semi-spaces; then a scavenge ran every megabyte
 * allocated, so anything alive for a few tens of milliseconds (a relist's
 * maps, a large response being written) was promoted, and collecting the
 * old generation took 15-20 % of the daemon's CPU under ListPods of 1000
 * pods. 4 MB semi-spaces: 160 scavenges and 5 full collections where 1 MB
 * made 364 and 13, 1.5x the ListPods/s at 1000 pods, for 0.6-1.4 MB more
 * RSS idle and at the peaks (BENCHMARKS.md). The old generation is capped below the DaemonSet's memory
 * limit (320 Mi) and the unit's MemoryMax, so V8 collects harder as it
 * nears the cap instead of growing into an OOM kill; 5000 pods use about
 * 130 MB of it (BENCHMARKS.md).
 *
 * @module
 */

/** The flags, as V8 takes them. */
export const DAEMON_V8_FLAGS: readonly string[] = [
  "--max-semi-space-size=4",
  "--max-old-space-size=192",
];

/**
 * @returns The flags as one `deno run` / `deno compile` argument.
 */
export function v8FlagsArg(): string {
  return `--v8-flags=${DAEMON_V8_FLAGS.join(",")}`;
}

/**
 * @returns The value of `DENO_V8_FLAGS` (deploy/).
 */
export function v8FlagsEnv(): string {
  return DAEMON_V8_FLAGS.join(",");
}
