/**
 * CLI start-up: wall time of client commands of the bundle (`deno task
 * bundle`, run with the binary's permissions) against a 110-pod simulated
 * node, each command run N times; medians, minima and maxima in ms, and
 * `deno eval ''` as the floor no Deno program goes under.
 *
 * `deno run --frozen --allow-read --allow-write --allow-run --allow-net bench/cli_startup_run.ts [--runs 15] [--bundle dist/pods-api.js]`
 *
 * @module
 */

import { parseArgs } from "node:util";
import { daemonPermissionFlags } from "../scripts/_permissions.ts";
import { waitReady } from "../tests/client/_sim_daemon.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    runs: { type: "string", default: "15" },
    bundle: { type: "string", default: "dist/pods-api.js" },
    pods: { type: "string", default: "110" },
  },
});
const runs = Number(values.runs);
const dir = await Deno.makeTempDir({ prefix: "pods-api-startup-" });
const socket = `${dir}/sock/pods-api.sock`;
const flags = daemonPermissionFlags({ socketDir: `${dir}/sock` });
const deno = Deno.execPath();
const daemon = new Deno.Command(deno, {
  args: [
    "run",
    ...flags,
    values.bundle,
    "serve",
    "--simulate",
    `--simulate-pods=${values.pods}`,
    "--simulate-churn=0",
    `--socket=${socket}`,
    "--kubelet-compat-socket=",
    "--metrics-bind-address=127.0.0.1:0",
    "--log-level=error",
  ],
  stdin: "null",
  stdout: "null",
  stderr: "null",
}).spawn();

async function time(args: string[]): Promise<number[]> {
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    const { success } = await new Deno.Command(deno, { args, stdout: "null", stderr: "null" })
      .output();
    ms.push(performance.now() - start);
    if (!success) throw new Error(`Failed: deno ${args.join(" ")}`);
  }
  return ms.sort((a, b) => a - b);
}

try {
  await waitReady(socket);
  const client = (...a: string[]) => ["run", ...flags, values.bundle!, ...a];
  const cases: Array<[string, string[]]> = [
    ["deno eval '' (floor)", ["eval", ""]],
    ["pods-api version", client("version")],
    ["pods-api list", client("list", `--socket=${socket}`)],
    ["pods-api list -o json", client("list", `--socket=${socket}`, "-o", "json")],
    ["pods-api get NS/NAME", client("get", "kube-system/nginx-proxy-vm", `--socket=${socket}`)],
    ["pods-api get --ip", client("get", "--ip", "10.244.44.4", `--socket=${socket}`)],
    ["pods-api ps", client("ps", `--socket=${socket}`)],
  ];
  // deno-lint-ignore no-console
  console.log(`| command | median ms | min ms | max ms |\n| --- | ---: | ---: | ---: |`);
  for (const [name, args] of cases) {
    const ms = await time(args);
    const median = ms[Math.floor(ms.length / 2)]!;
    // deno-lint-ignore no-console
    console.log(
      `| ${name} | ${median.toFixed(0)} | ${ms[0]!.toFixed(0)} | ${ms.at(-1)!.toFixed(0)} |`,
    );
  }
} finally {
  daemon.kill("SIGTERM");
  await daemon.status;
  await Deno.remove(dir, { recursive: true });
}
