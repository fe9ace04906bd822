/**
 * `pods-api simulate-runtime` for the daemon-alone live phase: the same
 * simulated node served as a CRI runtime in its own process, plus the
 * node's change timeline (bench/_sim_timeline.ts), written on SIGTERM, so
 * that watch latency can be read against it.
 *
 * Usage: `sim_runtime.ts --timeline FILE <simulate-runtime flags>`; prints the
 * runtime's one ready line on stdout.
 *
 * @module
 */

// deno-lint-ignore-file no-console

import { type Clock, systemClock } from "../../src/clock.ts";
import { createLogger } from "../../src/log.ts";
import {
  parseSimulateRuntimeFlags,
  runSimulateRuntime,
} from "../../src/sim/simulate_runtime_command.ts";
import { type Change, recordChanges, timelineText } from "../_sim_timeline.ts";

const args = [...Deno.args];
const at = args.indexOf("--timeline");
const timeline = at >= 0 ? args.splice(at, 2)[1] : undefined;
if (timeline === undefined) throw new TypeError("sim_runtime.ts needs --timeline FILE");
const options = parseSimulateRuntimeFlags(args);
if (options === "help") throw new TypeError("sim_runtime.ts has no --help");
// The node reads its start time once, when it is built: pin the clock
// meanwhile so that the start is known to the timeline.
const startMs = Date.now();
let pinned = true;
const clock: Clock = { ...systemClock, now: () => pinned ? startMs : Date.now() };
const changes: Change[] = [];
const stop = new AbortController();
Deno.addSignalListener("SIGTERM", () => stop.abort());
await runSimulateRuntime(options, {
  clock,
  log: createLogger({ level: options.logLevel }),
  signal: stop.signal,
  out: (line) => console.log(line),
  observe: (node) => {
    pinned = false;
    recordChanges(node, startMs, changes);
  },
});
await Deno.writeTextFile(timeline, timelineText(changes));
Deno.exit(0);
