/**
 * Proof of self-containment: `scripts/bundle.ts` output, copied alone into an
 * empty directory, runs the demo daemon with the executable's permissions
 * (scripts/_permissions.ts) and nothing else: no config file, no lock file,
 * no npm or remote modules, and no read access to the source tree, so any
 * `.proto` or asset read at run time would fail here. `scripts/compile.ts`
 * embeds this same bundle, so this is what the binary runs. A second bundled
 * daemon whose API server source watches the first one's HTTP API shows
 * that source works inside the bundle, offline, under those permissions.
 *
 * @module
 */

import assert from "node:assert/strict";
import { bundleCommand } from "../../scripts/_permissions.ts";
import { buildBundle } from "../../scripts/bundle.ts";
import { IMAGE_PATHS } from "../../scripts/image.ts";
import { pollUntil } from "../_support/poll.ts";

const DECODER = new TextDecoder();

interface LogLine {
  msg?: string;
  level?: string;
  metrics?: string;
  socket?: string;
  version?: string;
  [key: string]: unknown;
}

/** Reads a child's stderr line by line, keeping every parsed JSON line. */
class LogReader {
  readonly lines: LogLine[] = [];
  readonly raw: string[] = [];
  #waiters: { match: (l: LogLine) => boolean; resolve: (l: LogLine) => void }[] = [];
  #ended = Promise.withResolvers<void>();
  readonly done: Promise<void>;

  constructor(stream: ReadableStream<Uint8Array>) {
    this.done = this.#pump(stream);
  }

  async #pump(stream: ReadableStream<Uint8Array>): Promise<void> {
    let buffer = "";
    for await (const chunk of stream) {
      buffer += DECODER.decode(chunk, { stream: true });
      let newline;
      while ((newline = buffer.indexOf("\n")) !== -1) {
        this.#accept(buffer.slice(0, newline));
        buffer = buffer.slice(newline + 1);
      }
    }
    if (buffer !== "") this.#accept(buffer);
    this.#ended.resolve();
  }

  #accept(text: string): void {
    this.raw.push(text);
    let line: LogLine;
    try {
      line = JSON.parse(text);
    } catch {
      return;
    }
    this.lines.push(line);
    this.#waiters = this.#waiters.filter((w) => {
      if (!w.match(line)) return true;
      w.resolve(line);
      return false;
    });
  }

  /** Resolves with the first line that matches, or rejects when the stream ends first. */
  waitFor(match: (l: LogLine) => boolean): Promise<LogLine> {
    const seen = this.lines.find(match);
    if (seen) return Promise.resolve(seen);
    const { promise, resolve } = Promise.withResolvers<LogLine>();
    this.#waiters.push({ match, resolve });
    return Promise.race([
      promise,
      this.#ended.promise.then(() => {
        throw new Error(
          `The daemon exited before logging the line; its output:\n${this.raw.join("\n")}`,
        );
      }),
    ]);
  }
}

/**
 * `deno run` and its flags up to the bundle, as the image's entrypoint and the
 * documented systemd drop-in have them (scripts/_permissions.ts), with the
 * bundle named relative to the run directory.
 */
function runFlags(socketDir: string): string[] {
  return bundleCommand(Deno.execPath(), "pods-api.js", { socketDir }).slice(1, -1);
}

async function runClient(
  dir: string,
  socketDir: string,
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: [...runFlags(socketDir), "pods-api.js", ...args],
    cwd: dir,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code, stdout: DECODER.decode(stdout), stderr: DECODER.decode(stderr) };
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

async function get(url: string): Promise<{ status: number; body: string }> {
  const response = await fetch(url);
  return { status: response.status, body: await response.text() };
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}

Deno.test("buildBundle() output runs the demo daemon alone in an empty directory", async (t) => {
  const buildDir = await Deno.makeTempDir({ prefix: "pods-api-bundle-build-" });
  const runDir = await Deno.makeTempDir({ prefix: "pods-api-bundle-run-" });
  const socketParent = await Deno.makeTempDir({ prefix: "pods-api-bundle-sock-" });
  // Not created beforehand: the daemon makes its socket directory.
  const socketDir = `${socketParent}/pods-api`;
  const socket = `${socketDir}/pods-api.sock`;
  try {
    const built = await buildBundle(`${buildDir}/pods-api.js`);
    assert.equal(built.code, 0, built.log);
    await Deno.copyFile(`${buildDir}/pods-api.js`, `${runDir}/pods-api.js`);
    const entries = [];
    for await (const e of Deno.readDir(runDir)) entries.push(e.name);
    assert.deepEqual(entries, ["pods-api.js"]);

    await t.step("no CommonJS shim: Deno's Node module loader is not started", async () => {
      // A bundled CommonJS package that requires a Node built-in brings a
      // createRequire shim that costs every daemon about 5 MB of RSS
      // (BENCHMARKS.md, "Memory"); the bundle takes packages' ESM builds.
      const text = await Deno.readTextFile(`${runDir}/pods-api.js`);
      assert.doesNotMatch(text, /createRequire|from\s*"node:module"/);
      const nodeModules = new Set([...text.matchAll(/from\s*"(node:[a-z_/]+)"/g)].map((m) => m[1]));
      assert.deepEqual([...nodeModules].sort(), ["node:path", "node:process", "node:util"]);
    });

    await t.step("version prints the stamped version", async () => {
      const { code, stdout, stderr } = await runClient(runDir, socketDir, ["version"]);
      assert.equal(code, 0, stderr);
      assert.equal(stdout.trim(), `pods-api ${built.version}`);
    });

    await t.step(
      "the systemd drop-in's ExecStartPre leaves Deno's analysis of the bundle in DENO_DIR, with no permission",
      async () => {
        const ops = await Deno.readTextFile(new URL("../../docs/OPERATIONS.md", import.meta.url));
        const line = /^ExecStartPre=-(.*)$/m.exec(ops.replace(/\\\n\s*/g, ""))?.[1] ?? "";
        const [deno, ...args] = line.trim().split(/\s+/);
        assert.equal(deno, IMAGE_PATHS.deno);
        const denoDir = `${buildDir}/deno-dir`;
        const out = await new Deno.Command(Deno.execPath(), {
          args: args.map((a) => a === IMAGE_PATHS.bundle ? `${runDir}/pods-api.js` : a),
          env: { DENO_DIR: denoDir },
          stdout: "piped",
          stderr: "piped",
        }).output();
        assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
        assert.equal(new TextDecoder().decode(out.stdout).trim(), `pods-api ${built.version}`);
        const cache = await Deno.stat(`${denoDir}/dep_analysis_cache_v2`);
        assert.ok(cache.isFile && cache.size > 0, "Deno's module analysis is in DENO_DIR");
      },
    );

    const httpPort = freePort();
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        ...runFlags(socketDir),
        "pods-api.js",
        "serve",
        "--simulate",
        "--simulate-pods=12",
        "--simulate-churn=0",
        "--hostname-override=bundle-node",
        `--socket=${socket}`,
        "--kubelet-compat-socket=",
        "--metrics-bind-address=127.0.0.1:0",
        `--http-bind-address=127.0.0.1:${httpPort}`,
      ],
      cwd: runDir,
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    const log = new LogReader(child.stderr);
    let status: Deno.CommandStatus | undefined;
    try {
      const started = await log.waitFor((l) => l.msg === "pods-api started");
      assert.equal(started.version, built.version);
      assert.equal(started.socket, socket);
      const port = Number(/:(\d+)$/.exec(String(started.metrics))?.[1]);
      assert.ok(port > 0, `start-up line names the metrics port: ${JSON.stringify(started)}`);
      const base = `http://127.0.0.1:${port}`;
      // The simulated node syncs at once; poll until the gate opens.
      await pollUntil(async () => (await get(`${base}/readyz`)).status === 200, "/readyz ok");

      await t.step("the socket and its directory are private", async () => {
        assert.equal((await Deno.stat(socketDir)).mode! & 0o777, 0o750);
        const info = await Deno.lstat(socket);
        assert.ok(info.isSocket);
        assert.equal(info.mode! & 0o777, 0o660);
      });

      await t.step("/healthz and /readyz answer ok", async () => {
        assert.deepEqual(await get(`${base}/healthz`), { status: 200, body: "ok\n" });
        assert.deepEqual(await get(`${base}/readyz`), { status: 200, body: "ok\n" });
      });

      await t.step("the bundle's list client gets every pod over the socket", async () => {
        const { code, stdout, stderr } = await runClient(runDir, socketDir, [
          "list",
          `--socket=${socket}`,
          "-o",
          "json",
        ]);
        assert.equal(code, 0, stderr);
        const { items } = JSON.parse(stdout) as {
          items: { metadata: { uid: string }; spec: { nodeName: string } }[];
        };
        assert.equal(items.length, 12);
        assert.equal(new Set(items.map((p) => p.metadata.uid)).size, 12);
        for (const pod of items) assert.equal(pod.spec.nodeName, "bundle-node");
      });

      await t.step(
        "/metrics counts the CLI's List call (PodQuery, for its resume token)",
        async () => {
          const { status: code, body } = await get(`${base}/metrics`);
          assert.equal(code, 200);
          assert.match(
            body,
            /^kubelet_pod_requests_total\{server_api_version="podsapi_v1",status_code="OK"\} 1$/m,
          );
          assert.match(
            body,
            /^kubelet_pod_requests_list_total\{server_api_version="podsapi_v1",status_code="OK"\} 1$/m,
          );
          assert.match(body, /^# TYPE kubelet_pod_watch_events_dropped_total counter$/m);
        },
      );

      await t.step(
        "a second bundled daemon watching the first as its API server serves its pods",
        async () => {
          const secondDir = `${socketParent}/second`;
          const second = new Deno.Command(Deno.execPath(), {
            args: [
              ...runFlags(secondDir),
              "pods-api.js",
              "serve",
              "--simulate",
              "--simulate-pods=0",
              "--simulate-churn=0",
              "--hostname-override=bundle-node",
              `--socket=${secondDir}/pods-api.sock`,
              "--kubelet-compat-socket=",
              "--metrics-bind-address=127.0.0.1:0",
              `--apiserver=http://127.0.0.1:${httpPort}`,
            ],
            cwd: runDir,
            stdin: "null",
            stdout: "null",
            stderr: "piped",
          }).spawn();
          const secondLog = new LogReader(second.stderr);
          try {
            await secondLog.waitFor((l) => l.msg === "API server source synced");
            const { code, stdout, stderr } = await runClient(runDir, secondDir, [
              "list",
              `--socket=${secondDir}/pods-api.sock`,
              "-o",
              "json",
            ]);
            assert.equal(code, 0, stderr);
            const { items } = JSON.parse(stdout) as { items: { metadata: { uid: string } }[] };
            assert.equal(items.length, 12);
          } finally {
            second.kill("SIGTERM");
            assert.equal((await second.status).code, 0, secondLog.raw.join("\n"));
            await secondLog.done;
          }
        },
      );
    } finally {
      child.kill("SIGTERM");
      status = await child.status;
      await log.done;
    }

    await t.step("SIGTERM stops it with exit code 0 and removes the socket", async () => {
      assert.equal(status.code, 0, log.raw.join("\n"));
      assert.ok(log.lines.some((l) => l.msg === "stopped"));
      assert.equal(await exists(socket), false);
      assert.deepEqual(log.lines.filter((l) => l.level === "error"), []);
    });
  } finally {
    for (const dir of [buildDir, runDir, socketParent]) await Deno.remove(dir, { recursive: true });
  }
});
