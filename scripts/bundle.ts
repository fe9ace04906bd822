/**
 * Builds `dist/pods-api.js`: the whole daemon and its CLI in one JavaScript
 * file (`deno bundle`, npm packages inlined, the proto descriptor a static
 * import), runnable with `deno run` and the permissions of
 * scripts/_permissions.ts from any directory. `compile.ts` embeds this very
 * file in the executable, so the bundle test checks what the binary runs.
 *
 * The version (git tag or commit) is stamped into the written bundle, not into
 * the source (scripts/stamp_version.ts), so the work tree stays clean.
 *
 * Run from the repository root (task `bundle`):
 * `deno run --allow-run --allow-read --allow-write=dist scripts/bundle.ts [--output PATH]`
 *
 * Exit codes: 0 built, 1 build failed, 2 bad flags.
 *
 * @module
 */

import { cleanDenoOutput, runDeno } from "./_run_deno.ts";
import { describeVersion, ROOT_DIR, stampBundleFile } from "./stamp_version.ts";

/** The bundle's default path, relative to the repository root. */
export const DEFAULT_BUNDLE = "dist/pods-api.js";

/**
 * The `deno bundle` arguments.
 *
 * @param output Where to write the bundle (relative to the repository root or absolute).
 * @returns The arguments after `deno`.
 */
export function bundleArgs(output: string): string[] {
  return [
    "bundle",
    "--frozen",
    // Type-checked like `deno compile` would: the bundle is what ships.
    "--check",
    // npm packages resolved by their ESM builds ("default" in their
    // exports, not "node"): `yaml`'s Node build is CommonJS that requires
    // node:process and node:buffer, and bundling CommonJS puts a
    // `createRequire` shim at the top of the bundle, which starts Deno's
    // Node module loader in every daemon: about 5 MB of RSS (BENCHMARKS.md,
    // "Memory"). The daemon's own `node:` imports and `Deno` are unaffected.
    "--platform",
    "browser",
    "--packages",
    "bundle",
    "--output",
    output,
    "main.ts",
  ];
}

/** A built bundle. */
export interface BundleResult {
  /** Zero when the bundle was written. */
  readonly code: number;
  /** Deno's output, without colours or backtrace. */
  readonly log: string;
  /** The version stamped into it. */
  readonly version: string;
}

/**
 * Bundles `main.ts` and stamps the version into the bundle.
 *
 * @param output Where to write the bundle (relative to the repository root or absolute).
 * @returns Deno's exit code and output, and the version.
 * @throws {SyntaxError} When the bundle cannot be stamped (see `stampBundle`).
 */
export async function buildBundle(output: string = DEFAULT_BUNDLE): Promise<BundleResult> {
  const version = await describeVersion();
  const { code, stderr } = await runDeno(bundleArgs(output));
  if (code === 0) await stampBundleFile(new URL(output, ROOT_DIR), version);
  return { code, log: cleanDenoOutput(stderr), version };
}

/**
 * Parses `--output PATH` (the only flag).
 *
 * @param args The script's arguments.
 * @returns The output path.
 * @throws {TypeError} For any other argument.
 */
export function parseBundleFlags(args: readonly string[]): string {
  let output = DEFAULT_BUNDLE;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--output" && args[i + 1]) output = args[++i]!;
    else if (arg.startsWith("--output=") && arg.length > 9) output = arg.slice(9);
    else throw new TypeError(`Unknown argument "${arg}": use --output PATH`);
  }
  return output;
}

if (import.meta.main) {
  const encoder = new TextEncoder();
  const err = (line: string) => Deno.stderr.writeSync(encoder.encode(line + "\n"));
  let output: string;
  try {
    output = parseBundleFlags(Deno.args);
  } catch (e) {
    err(`bundle: ${(e as Error).message}`);
    Deno.exit(2);
  }
  let result: BundleResult;
  try {
    result = await buildBundle(output);
  } catch (e) {
    err(`bundle: ${(e as Error).message}`);
    Deno.exit(1);
  }
  if (result.code !== 0) {
    err(
      `bundle: ${
        result.log.split("\n").filter((l) => !/^Bundled |^⚠️/.test(l)).join("\n") ||
        "deno bundle failed"
      }`,
    );
    Deno.exit(1);
  }
  err(`bundle: wrote ${output} (pods-api ${result.version})`);
}
