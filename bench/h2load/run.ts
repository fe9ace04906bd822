/**
 * Unary speed against the Go server, the issue 19 way: the daemon alone
 * (reading `pods-api simulate-runtime` in another process) and
 * bench/go/refserver (grpc-go 1.33.3, Debian's 2020 build, replaying the
 * daemon's own ListPods and GetPod bytes) pinned to the same single CPU
 * (`--server-cpu`, default 0), nghttp2's h2load and the simulated runtime on
 * another (`--client-cpu`, default 1), over the UNIX socket. Each phase runs
 * `--repeat` times per server, daemon and Go interleaved (ABBA), the best
 * run of each kept. Also: the daemon's ListPods and GetPod at c=1 while its
 * node changes 50 times a second (every change re-encodes a pod and
 * invalidates the list body), against its own figure without churn.
 *
 * Throughput ratios need a quiet machine: the load average is printed before
 * and after. Needs h2load (`nghttp2-client`), golang-go and
 * golang-google-grpc-dev.
 *
 * Usage: `deno task bench:h2load [--pods 110,1000] [--seconds 5] [--repeat 3]
 *   [--server-cpu 0] [--client-cpu 1] [--json FILE]`
 *
 * @module
 */

// deno-lint-ignore-file no-console

import { parseArgs } from "node:util";
import { encodeGetPodRequest } from "../../src/proto/mod.ts";
import {
  grpcFrame,
  h2load,
  loadAverage,
  type Proc,
  spawnProc,
  startDaemonAlone,
  stopProc,
} from "../_daemon_alone.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const LIST = "/v1alpha1.Pods/ListPods";
const GET = "/v1alpha1.Pods/GetPod";

async function goBuild(dir: string, pkg: string): Promise<string> {
  const out = `${dir}/${pkg.split("/").at(-1)}`;
  const result = await new Deno.Command("go", {
    args: ["build", "-o", out, pkg],
    cwd: ROOT,
    env: { GO111MODULE: "off", GOPATH: `${dir}/gopath:/usr/share/gocode` },
    stderr: "piped",
  }).output();
  if (!result.success) {
    throw new Error(`go build ${pkg}: ${new TextDecoder().decode(result.stderr)}`);
  }
  return out;
}

interface Phase {
  name: string;
  path: string;
  body: string;
  clients: number;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      pods: { type: "string", default: "110,1000" },
      seconds: { type: "string", default: "5" },
      repeat: { type: "string", default: "3" },
      "server-cpu": { type: "string", default: "0" },
      "client-cpu": { type: "string", default: "1" },
      json: { type: "string" },
    },
  });
  const seconds = Number(values.seconds);
  const repeat = Number(values.repeat);
  const serverCpu = Number(values["server-cpu"]);
  const clientCpu = Number(values["client-cpu"]);
  const dir = await Deno.makeTempDir({ prefix: "pods-api-h2load-bench-" });
  const log = (s: string) => console.error(`[h2load-bench] ${s}`);
  const loadBefore = await loadAverage();
  const rows: string[] = [
    "| phase | daemon req/s | Go req/s | daemon / Go | target | met |",
    "|---|---:|---:|---:|---|---|",
  ];
  const raw: Record<string, unknown> = {};
  try {
    const loadclient = await goBuild(dir, "./bench/go/loadclient");
    const refserver = await goBuild(dir, "./bench/go/refserver");
    const listBody = `${dir}/list.bin`;
    await Deno.writeFile(listBody, grpcFrame(new Uint8Array()));
    for (const pods of values.pods!.split(",").map(Number)) {
      log(`${pods} pods`);
      const alone = await startDaemonAlone({
        dir,
        tag: `speed-${pods}`,
        pods,
        churn: 0,
        daemonCpu: serverCpu,
        runtimeCpu: clientCpu,
      });
      let go: Proc | undefined;
      try {
        const dump = `${dir}/dump-${pods}`;
        await Deno.mkdir(dump);
        const dumped = await new Deno.Command(loadclient, {
          args: ["dump", "-socket", alone.socket, "-out", dump],
          stdout: "piped",
        }).output();
        const { uid } = JSON.parse(new TextDecoder().decode(dumped.stdout)) as { uid: string };
        const getBody = `${dir}/get-${pods}.bin`;
        await Deno.writeFile(getBody, grpcFrame(encodeGetPodRequest(uid)));
        const goSocket = `${dir}/go-${pods}.sock`;
        go = spawnProc(
          refserver,
          [
            "-socket",
            goSocket,
            "-list",
            `${dump}/list.bin`,
            "-get",
            `${dump}/get.bin`,
            "-watch",
            `${dump}/watch.bin`,
          ],
          `${dir}/go-${pods}.log`,
          serverCpu,
        );
        await go.firstLine;
        const phases: Phase[] = [
          { name: "ListPods c=1", path: LIST, body: listBody, clients: 1 },
          { name: "ListPods c=4", path: LIST, body: listBody, clients: 4 },
          { name: "GetPod c=1", path: GET, body: getBody, clients: 1 },
          { name: "GetPod c=4", path: GET, body: getBody, clients: 4 },
        ];
        for (const phase of phases) {
          const best = { daemon: 0, go: 0 };
          for (let i = 0; i < repeat; i++) {
            const order = i % 2 === 0 ? ["daemon", "go"] as const : ["go", "daemon"] as const;
            for (const server of order) {
              const r = await h2load({
                socket: server === "daemon" ? alone.socket : goSocket,
                path: phase.path,
                body: phase.body,
                clients: phase.clients,
                streams: 1,
                seconds,
                warmUpSeconds: 1,
                cpu: clientCpu,
              });
              if (r.succeeded === 0) {
                throw new Error(`${phase.name} on ${server}: no request succeeded`);
              }
              best[server] = Math.max(best[server], r.rps);
            }
          }
          const ratio = best.daemon / best.go;
          rows.push(
            `| ${phase.name}, ${pods} pods | ${best.daemon.toFixed(0)} | ${best.go.toFixed(0)} | ${
              ratio.toFixed(2)
            }x | >= 1.0x | ${ratio >= 1 ? "met" : "**missed**"} |`,
          );
          raw[`${phase.name} ${pods}`] = best;
        }
      } finally {
        if (go !== undefined) await stopProc(go);
        await alone.stop();
      }
    }
    // The unary paths under churn: the daemon against itself without churn.
    const churnPods = 110;
    const getBody = `${dir}/get-${churnPods}.bin`;
    for (const churn of [0, 50]) {
      const alone = await startDaemonAlone({
        dir,
        tag: `churn-${churn}`,
        pods: churnPods,
        churn,
        daemonCpu: serverCpu,
        runtimeCpu: clientCpu,
      });
      try {
        for (const phase of [["ListPods", LIST, listBody], ["GetPod", GET, getBody]] as const) {
          let best = 0;
          for (let i = 0; i < repeat; i++) {
            const r = await h2load({
              socket: alone.socket,
              path: phase[1],
              body: phase[2],
              clients: 1,
              streams: 1,
              seconds,
              warmUpSeconds: 1,
              cpu: clientCpu,
            });
            best = Math.max(best, r.rps);
          }
          raw[`${phase[0]} churn ${churn}`] = best;
        }
      } finally {
        await alone.stop();
      }
    }
    for (const name of ["ListPods", "GetPod"]) {
      const quiet = raw[`${name} churn 0`] as number;
      const busy = raw[`${name} churn 50`] as number;
      rows.push(
        `| ${name} c=1, ${churnPods} pods, 50 changes/s (vs none: ${quiet.toFixed(0)}) | ${
          busy.toFixed(0)
        } | | ${(busy / quiet).toFixed(2)}x of no churn | | |`,
      );
    }
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
  const loadAfter = await loadAverage();
  console.log(
    `Deno ${Deno.version.deno}; daemon and Go server on CPU ${serverCpu}, h2load and the ` +
      `simulated runtime on CPU ${clientCpu}; ${seconds} s per run after 1 s of warm-up, best of ` +
      `${repeat}; load average ${loadBefore} before, ${loadAfter} after.\n`,
  );
  console.log(rows.join("\n"));
  if (values.json) await Deno.writeTextFile(values.json, JSON.stringify(raw, null, 2));
}

await main();
