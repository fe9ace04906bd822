/**
 * pods-api: the Kubelet Pods API served from node-local truth.
 *
 * `pods-api serve` runs the daemon; `list`, `get`, `watch`, `ps` and
 * `completion` are its clients (src/client/cli.ts); `version` prints the build. Composition only: every part lives in
 * `src/`.
 *
 * @module
 */

import { CLIENT_USAGE, runClientCommand } from "./src/client/cli.ts";
import { commandHelp } from "./src/client/cli_flags.ts";
import { KUBECONFIG_USAGE, kubeconfigCommand } from "./src/client/kubeconfig.ts";
import { systemClock } from "./src/clock.ts";
import { parseServeConfig, printableConfig, type ServeConfig, serveHelp } from "./src/config.ts";
import { startDaemon } from "./src/daemon.ts";
import { dropClientScope } from "./src/daemon_permissions.ts";
import { createLogger, type Logger } from "./src/log.ts";
import { createMetricsRegistry } from "./src/metrics/registry.ts";
import { simulatedSources } from "./src/sim/mod.ts";
import {
  parseSimulateRuntimeFlags,
  runSimulateRuntime,
  SIMULATE_RUNTIME_USAGE,
  simulateRuntimeHelp,
} from "./src/sim/simulate_runtime_command.ts";
import { createSources } from "./src/sources/create.ts";
import { RuntimeSocketAccessError } from "./src/sources/cri/mod.ts";
import { runtimeWaitReason, type RuntimeWaitStatus } from "./src/sources/runtime_wait.ts";
import { StartupProbe } from "./src/metrics/startup_probe.ts";
import { OwnSockets, type SocketIdentity } from "./src/server/unix_socket.ts";
import { BUILD_VERSION } from "./src/version.ts";

/** Exit codes of `pods-api`, documented in the README. */
export const EXIT = {
  ok: 0,
  failure: 1,
  usage: 2,
  noRuntime: 3,
} as const;

const ENCODER = new TextEncoder();
const SIGNAL_DEBOUNCE_MS = 300;

function writeAll(file: typeof Deno.stdout, text: string, newline = true): void {
  let bytes = ENCODER.encode(newline ? text + "\n" : text);
  try {
    // A pipe may take less than the whole buffer per write.
    while (bytes.length > 0) bytes = bytes.subarray(file.writeSync(bytes));
  } catch (e) {
    // The reader went away (`pods-api list | head`): stop quietly, as kubectl does.
    if (e instanceof Deno.errors.BrokenPipe) Deno.exit(EXIT.ok);
    throw e;
  }
}

function out(text: string): void {
  writeAll(Deno.stdout, text);
}

function err(text: string): void {
  writeAll(Deno.stderr, text);
}

const USAGE = `pods-api ${BUILD_VERSION}: the Kubelet Pods API, served from node-local truth

Usage:
  pods-api serve [flags]      run the daemon (pods-api serve --help for every flag)
  pods-api version
${KUBECONFIG_USAGE}
${SIMULATE_RUNTIME_USAGE}

${CLIENT_USAGE}`;

function readEnv(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    // Not permitted: the variable reads as unset.
    return undefined;
  }
}

async function serve(config: ServeConfig, log: Logger): Promise<number> {
  const registry = createMetricsRegistry({ processMetrics: true });
  const stopped = Promise.withResolvers<void>();
  const stopping = new AbortController();
  let firstSignalAt: number | undefined;
  const onSignal = (name: Deno.Signal) => () => {
    const now = Date.now();
    // One kill often reaches us twice (from the shell's process group and a
    // wrapper forwarding it); only a later, separate signal means "now".
    if (firstSignalAt !== undefined && now - firstSignalAt < SIGNAL_DEBOUNCE_MS) return;
    if (firstSignalAt !== undefined) {
      log.warn("second signal, exiting now", { signal: name });
      Deno.exit(EXIT.failure);
    }
    firstSignalAt = now;
    log.info("shutting down", { signal: name });
    stopping.abort();
    stopped.resolve();
  };
  // Installed before the wait for the runtime: a stop during a slow boot is a clean stop.
  const handlers = (["SIGTERM", "SIGINT"] as const).map((s) => [s, onSignal(s)] as const);
  for (const [s, h] of handlers) Deno.addSignalListener(s, h);
  try {
    const probe = new StartupProbe(
      { hostname: config.metricsHost, port: config.metricsPort },
      { registry, log: log.child("http") },
    );
    let created;
    let probePort: number | undefined;
    // The sockets the daemon binds: the kubelet Pods API source must never read its own.
    const ownSockets = new OwnSockets();
    try {
      const deps = {
        log,
        clock: systemClock,
        metrics: registry.metrics,
        isOwnSocket: (id: SocketIdentity) => ownSockets.has(id),
        signal: stopping.signal,
        onRuntimeWaiting: (status: RuntimeWaitStatus) => probe.notReady(runtimeWaitReason(status)),
      };
      // The simulator is a leaf: only here is it wired in.
      created = config.simulate
        ? await simulatedSources(config, deps)
        : await createSources(config, deps);
    } catch (err) {
      if (!stopping.signal.aborted) throw err;
      log.info("stopped");
      return EXIT.ok;
    } finally {
      probePort = await probe.close();
    }
    await using _sources = created;
    const { sources } = created;
    // A :0 metrics address keeps the port the probe had.
    const effective = config.metricsPort === 0 && probePort !== undefined
      ? { ...config, metricsPort: probePort }
      : config;
    const daemon = await startDaemon(effective, {
      log,
      clock: systemClock,
      sources,
      ...(created.procFs === undefined ? {} : { procFs: created.procFs }),
      registry,
      ownSockets,
    });
    log.info("pods-api started", {
      version: BUILD_VERSION,
      socket: daemon.socketPath,
      metrics: `${config.metricsHost}:${daemon.metricsPort}`,
      sources: created.names,
      runtime: created.runtime,
      node: config.nodeName,
    });
    await stopped.promise;
    await daemon.close();
    log.info("stopped");
    return EXIT.ok;
  } finally {
    for (const [s, h] of handlers) Deno.removeSignalListener(s, h);
  }
}

/**
 * Runs one `pods-api` command line.
 *
 * @param args The arguments after the program name.
 * @returns The exit code.
 */
export async function main(args: readonly string[]): Promise<number> {
  const [command, ...rest] = args;
  switch (command) {
    case "serve": {
      // Before anything is read or written: the daemon keeps only its scoped paths.
      dropClientScope();
      if (rest.includes("--help") || rest.includes("-h")) {
        out(serveHelp());
        return EXIT.ok;
      }
      let config: ServeConfig;
      try {
        config = parseServeConfig(rest);
      } catch (e) {
        err(`pods-api serve: ${(e as Error).message}`);
        return EXIT.usage;
      }
      if (config.printConfig) {
        out(JSON.stringify(printableConfig(config), null, 2));
        return EXIT.ok;
      }
      const log = createLogger({ level: config.logLevel });
      try {
        return await serve(config, log);
      } catch (e) {
        if (e instanceof Deno.errors.NotCapable) {
          // The compiled binary may touch only the paths it was built for.
          log.error("pods-api is not permitted to use this path", {
            error: e.message.replace(/, run again with.*$/s, ""),
            hint: "the binary allows the default socket and runtime paths; see docs/OPERATIONS.md",
          });
          return EXIT.usage;
        }
        if (e instanceof RuntimeSocketAccessError) {
          // Waiting cannot grant a permission: exit 2, which systemd does not restart.
          log.error("pods-api may not open the container runtime socket", {
            socket: e.socketPath,
            error: e.message,
          });
          return EXIT.usage;
        }
        log.error("pods-api failed", { error: e });
        return (e as { exitCode?: number }).exitCode ?? EXIT.failure;
      }
    }
    case "list":
    case "get":
    case "watch":
    case "ps":
    case "devices":
    case "whois":
    case "completion": {
      const interrupt = new AbortController();
      // Ctrl-C cancels the call: the stream is reset and the connection closed.
      const onInt = () => interrupt.abort();
      Deno.addSignalListener("SIGINT", onInt);
      try {
        return await runClientCommand(command, rest, {
          out,
          write: (text) => writeAll(Deno.stdout, text, false),
          err,
          now: () => Date.now(),
          signal: interrupt.signal,
          env: readEnv,
        });
      } finally {
        Deno.removeSignalListener("SIGINT", onInt);
      }
    }
    case "simulate-runtime": {
      let options;
      try {
        options = parseSimulateRuntimeFlags(rest);
      } catch (e) {
        err(`pods-api simulate-runtime: ${(e as Error).message}`);
        return EXIT.usage;
      }
      if (options === "help") {
        out(simulateRuntimeHelp());
        return EXIT.ok;
      }
      const stop = new AbortController();
      const onStop = () => stop.abort();
      const signals = ["SIGTERM", "SIGINT"] as const;
      for (const s of signals) Deno.addSignalListener(s, onStop);
      try {
        await runSimulateRuntime(options, {
          clock: systemClock,
          log: createLogger({ level: options.logLevel }),
          signal: stop.signal,
          out,
        });
        return EXIT.ok;
      } finally {
        for (const s of signals) Deno.removeSignalListener(s, onStop);
      }
    }
    case "kubeconfig":
      if (rest.includes("--help") || rest.includes("-h")) {
        out(
          `Print a kubeconfig for the daemon's HTTP API (kubectl, client-go, python-kubernetes).\n\nUsage:\n${KUBECONFIG_USAGE} [--name NAME]`,
        );
        return EXIT.ok;
      }
      try {
        out(kubeconfigCommand(rest, (path) => Deno.readTextFileSync(path)).trimEnd());
        return EXIT.ok;
      } catch (e) {
        err(`pods-api kubeconfig: ${(e as Error).message}`);
        return EXIT.usage;
      }
    case "version":
      if (rest.includes("--help") || rest.includes("-h")) {
        out(commandHelp("version"));
        return EXIT.ok;
      }
      out(`pods-api ${BUILD_VERSION}`);
      return EXIT.ok;
    case undefined:
    case "help":
    case "--help":
    case "-h":
      out(USAGE);
      return EXIT.ok;
    default:
      err(`pods-api: unknown command "${command}" (see pods-api --help)`);
      return EXIT.usage;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
