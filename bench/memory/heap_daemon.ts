/**
 * `pods-api` exactly as `main.ts` runs it, plus one hook for the memory
 * benchmark: on SIGUSR2 it writes a V8 heap snapshot and the V8 space
 * statistics to `$PODS_API_HEAP_SNAPSHOT` (`.heapsnapshot` and
 * `.spaces.json`), then prints `snapshot <path>` on stderr; on SIGUSR1 it
 * prints one line `memory <json>` (RSS, V8 heap, external) on stderr, no snapshot.
 *
 * Usage: `PODS_API_HEAP_SNAPSHOT=/tmp/d deno run <perms> bench/memory/heap_daemon.ts serve ...`
 *
 * @module
 */

import v8 from "node:v8";
import { main } from "../../main.ts";

const base = Deno.env.get("PODS_API_HEAP_SNAPSHOT") ?? "/tmp/pods-api-heap";
let taken = 0;
Deno.addSignalListener("SIGUSR2", () => {
  const path = `${base}-${taken++}`;
  const spaces = v8.getHeapSpaceStatistics();
  const heap = v8.getHeapStatistics();
  const rss = Deno.memoryUsage();
  v8.writeHeapSnapshot(`${path}.heapsnapshot`);
  Deno.writeTextFileSync(`${path}.spaces.json`, JSON.stringify({ spaces, heap, rss }, null, 1));
  Deno.stderr.writeSync(new TextEncoder().encode(`snapshot ${path}\n`));
});
Deno.addSignalListener("SIGUSR1", () => {
  const line = JSON.stringify({
    ...Deno.memoryUsage(),
    heap: v8.getHeapStatistics(),
    spaces: v8.getHeapSpaceStatistics(),
  });
  Deno.stderr.writeSync(new TextEncoder().encode(`memory ${line}\n`));
});
Deno.exit(await main(Deno.args));
