/**
 * Builds the `pods-api` executable in two steps: `bundle.ts` writes the
 * daemon as one JavaScript file (version stamped, npm packages inlined), then
 * `deno compile --frozen` embeds that file with exactly the daemon's
 * permissions (scripts/_permissions.ts, never `--allow-all`).
 *
 * Why not `deno compile main.ts` directly: Deno 2.9.x compile aborts with a
 * stack overflow while embedding this project's npm packages (importing
 * `bintrees`, a dependency of the prom-client the daemon used to have, alone
 * was enough; it looks like denoland/deno#36746, open, a regression since 2.9.0).
 * A bundle has no npm tree to embed, makes the binary smaller, and means the
 * bundle test (tests/ship/bundle_test.ts) runs exactly the code the binary runs.
 *
 * Run from the repository root (task `compile`):
 * `deno run --allow-run --allow-read --allow-write=dist --allow-env=DENORT_BIN scripts/compile.ts [flags]`
 *
 * Flags:
 * - `--output PATH`: where to write the executable (default `dist/pods-api`)
 * - `--target TRIPLE`: cross-compile, e.g. `aarch64-unknown-linux-gnu`
 * - `--socket-dir DIR`: the directory of `serve --socket` the binary may write
 *   (default `/run/pods-api`), besides the kubelet's Pods API directory
 *   `/var/lib/kubelet/pods-api` (the compatibility socket)
 *
 * `deno compile` appends the program to `denort`, a runtime it downloads from
 * dl.deno.land, or takes from `DENORT_BIN` when that is set (Deno reads the
 * variable itself; this script passes the environment through and checks the
 * path first). When neither works the script says so in one line and exits 1.
 * A binary for this machine's target is then run (`version`): one that does
 * not print `pods-api <the stamped version>` (a `DENORT_BIN` that is not the
 * denort of this Deno version and target, say) is removed and the script
 * exits 1 saying so; one for another target cannot be run here and is only
 * reported as unchecked.
 * Exit codes: 0 built, 1 build failed or the binary does not run, 2 bad flags.
 *
 * @module
 */

import { cleanDenoOutput, runDeno } from "./_run_deno.ts";
import { daemonPermissionFlags, DEFAULT_SOCKET_DIR } from "./_permissions.ts";
import { v8FlagsArg } from "./_v8_flags.ts";
import { buildBundle } from "./bundle.ts";
import { ROOT_DIR } from "./stamp_version.ts";

/** The executable's default path, relative to the repository root. */
export const DEFAULT_OUTPUT = "dist/pods-api";

/** The flags of the compile script. */
export interface CompileFlags {
  /** The executable to write; the bundle goes next to it as `<output>.js`. */
  output: string;
  /** `deno compile --target`, or the host's target when undefined. */
  target: string | undefined;
  /** The one directory the executable may write (see `_permissions.ts`). */
  socketDir: string;
}

/**
 * Parses the compile script's flags.
 *
 * @param args The script's arguments.
 * @returns The flags with their defaults filled in.
 * @throws {TypeError} For an unknown flag or a flag without its value.
 */
export function parseCompileFlags(args: readonly string[]): CompileFlags {
  const flags: CompileFlags = {
    output: DEFAULT_OUTPUT,
    target: undefined,
    socketDir: DEFAULT_SOCKET_DIR,
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const eq = arg.indexOf("=");
    const name = eq === -1 ? arg : arg.slice(0, eq);
    if (!["--output", "--target", "--socket-dir"].includes(name)) {
      throw new TypeError(`Unknown flag "${arg}": use --output, --target or --socket-dir`);
    }
    const value = eq === -1 ? args[++i] : arg.slice(eq + 1);
    if (value === undefined || value === "") throw new TypeError(`Flag "${name}" needs a value`);
    if (name === "--output") flags.output = value;
    else if (name === "--target") flags.target = value;
    else flags.socketDir = value;
  }
  return flags;
}

/**
 * The `deno compile` arguments for the given flags.
 *
 * @param flags Output, target and socket directory.
 * @param bundle The bundle to embed (see `bundle.ts`).
 * @returns The arguments after `deno`.
 */
export function compileArgs(flags: CompileFlags, bundle: string): string[] {
  return [
    "compile",
    "--frozen",
    // Embedded in the executable: the binary starts with the daemon's V8 sizing.
    v8FlagsArg(),
    ...daemonPermissionFlags({ socketDir: flags.socketDir }),
    ...(flags.target ? ["--target", flags.target] : []),
    "--output",
    flags.output,
    bundle,
  ];
}

/** The one line printed when `denort` cannot be had. */
export const DENORT_UNREACHABLE =
  "deno compile needs the denort runtime from dl.deno.land, which is unreachable; " +
  "set DENORT_BIN=/path/to/denort (the denort of this Deno version and target) and run again";

/**
 * Explains a failed `deno compile` in as few lines as it takes: one line when
 * the runtime download or `DENORT_BIN` is the problem, Deno's own message
 * (without colours or backtrace) otherwise.
 *
 * @param stderr Deno's standard error.
 * @returns The message to print.
 */
export function explainCompileFailure(stderr: string): string {
  const text = cleanDenoOutput(stderr);
  const missing = /Could not find denort at '([^']*)'/.exec(text);
  if (missing) {
    return `DENORT_BIN is set to "${
      missing[1]
    }", which does not exist; point it at a denort binary`;
  }
  if (
    /dl\.deno\.land/.test(text) &&
    /error sending request|dns error|connect|timed out|proxy/i.test(text)
  ) {
    return DENORT_UNREACHABLE;
  }
  const lines = text.split("\n").filter((line) => !/^\s*(Check|Compile|Download)\s/.test(line));
  return lines.join("\n").trim() || "deno compile failed";
}

async function preflightDenort(): Promise<string | undefined> {
  const denort = Deno.env.get("DENORT_BIN");
  if (denort === undefined || denort === "") return undefined;
  try {
    const info = await Deno.stat(denort);
    if (!info.isFile) {
      return `DENORT_BIN is set to "${denort}", which is not a file; point it at a denort binary`;
    }
  } catch {
    return `DENORT_BIN is set to "${denort}", which does not exist; point it at a denort binary`;
  }
  return undefined;
}

/** How long the built binary may take to print its version before it counts as hung. */
const VERSION_CHECK_LIMIT_MS = 60_000;

/**
 * Runs the built binary's `version`.
 *
 * @param binary The executable's path.
 * @param version The version stamped into its bundle.
 * @returns Why it does not run as pods-api, or `undefined` when it prints `pods-api <version>`.
 */
export async function checkBinaryRuns(
  binary: string,
  version: string,
): Promise<string | undefined> {
  const child = new Deno.Command(binary, {
    args: ["version"],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    clearEnv: true,
  }).spawn();
  const hung = setTimeout(() => child.kill("SIGKILL"), VERSION_CHECK_LIMIT_MS);
  const { code, stdout, stderr } = await child.output().finally(() => clearTimeout(hung));
  const out = new TextDecoder().decode(stdout);
  if (code === 0 && out === `pods-api ${version}\n`) return undefined;
  const said = cleanDenoOutput(new TextDecoder().decode(stderr)).split("\n")[0]?.trim() ||
    out.split("\n")[0]?.trim() || "nothing";
  return `"${binary} version" exited ${code} and printed ${JSON.stringify(said)}, not ` +
    `"pods-api ${version}": DENORT_BIN must be the denort (not deno) of Deno ${Deno.version.deno} ` +
    `for this target; the binary was removed`;
}

async function main(args: readonly string[]): Promise<number> {
  const encoder = new TextEncoder();
  const err = (line: string) => Deno.stderr.writeSync(encoder.encode(line + "\n"));
  let flags: CompileFlags;
  try {
    flags = parseCompileFlags(args);
  } catch (e) {
    err(`compile: ${(e as Error).message}`);
    return 2;
  }
  const problem = await preflightDenort();
  if (problem) {
    err(`compile: ${problem}`);
    return 1;
  }
  const bundlePath = `${flags.output}.js`;
  let bundle;
  try {
    bundle = await buildBundle(bundlePath);
  } catch (e) {
    err(`compile: ${(e as Error).message}`);
    return 1;
  }
  if (bundle.code !== 0) {
    err(`compile: bundling failed\n${bundle.log}`);
    return 1;
  }
  const result = await runDeno(compileArgs(flags, bundlePath));
  if (result.code !== 0) {
    err(`compile: ${explainCompileFailure(result.stderr)}`);
    return 1;
  }
  const output = new URL(flags.output, ROOT_DIR);
  const size = (await Deno.stat(output)).size;
  const described = `pods-api ${bundle.version}, ${(size / 2 ** 20).toFixed(1)} MiB`;
  if (flags.target !== undefined && flags.target !== Deno.build.target) {
    err(`compile: wrote ${flags.output} (${described}; built for ${flags.target}, not run here)`);
    return 0;
  }
  const broken = await checkBinaryRuns(output.pathname, bundle.version);
  if (broken !== undefined) {
    await Deno.remove(output);
    err(`compile: ${broken}`);
    return 1;
  }
  err(`compile: wrote ${flags.output} (${described})`);
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
