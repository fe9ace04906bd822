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
 * The bundle is minified, in a second pass over the stamped bundle (the
 * stamp looks for `var BUILD_VERSION`, a name minifying renames): V8 keeps
 * every script's source and the names of its functions and scopes for as
 * long as it runs, and the minified bundle (0.57 MB against 1.26 MB) idles
 * 6 MB lower at 110 pods (BENCHMARKS.md, "Memory"). The price is stack
 * traces with short names; `--no-minify` builds a readable bundle to debug
 * with.
 *
 * Run from the repository root (task `bundle`):
 * `deno run --allow-run --allow-read --allow-write=dist scripts/bundle.ts [--output PATH] [--no-minify]`
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
 * The `deno bundle` arguments of the first pass: the sources, type-checked,
 * into one readable file.
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
 * The `deno bundle` arguments of the second pass: a stamped bundle, minified.
 *
 * @param input The stamped bundle of the first pass.
 * @param output Where to write the minified bundle.
 * @returns The arguments after `deno`.
 */
export function minifyArgs(input: string, output: string): string[] {
  return ["bundle", "--frozen", "--platform", "browser", "--minify", "--output", output, input];
}

/**
 * Bundles `main.ts`, stamps the version into the bundle and minifies it.
 *
 * @param output Where to write the bundle (relative to the repository root or absolute).
 * @param options `minify: false` keeps the readable first pass.
 * @returns Deno's exit code and output, and the version.
 * @throws {SyntaxError} When the bundle cannot be stamped (see `stampBundle`).
 */
export async function buildBundle(
  output: string = DEFAULT_BUNDLE,
  options: { minify?: boolean } = {},
): Promise<BundleResult> {
  const version = await describeVersion();
  const minify = options.minify ?? true;
  const readable = minify ? `${output}.readable.js` : output;
  let { code, stderr } = await runDeno(bundleArgs(readable));
  if (code === 0) await stampBundleFile(new URL(readable, ROOT_DIR), version);
  if (code === 0 && minify) {
    ({ code, stderr } = await runDeno(minifyArgs(readable, output)));
  }
  if (minify) await Deno.remove(new URL(readable, ROOT_DIR)).catch(() => {});
  return { code, log: cleanDenoOutput(stderr), version };
}

/** What the script's flags ask for. */
export interface BundleFlags {
  readonly output: string;
  readonly minify: boolean;
}

/**
 * Parses `--output PATH` and `--no-minify`.
 *
 * @param args The script's arguments.
 * @returns The output path and whether to minify.
 * @throws {TypeError} For any other argument.
 */
export function parseBundleFlags(args: readonly string[]): BundleFlags {
  let output = DEFAULT_BUNDLE;
  let minify = true;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--output" && args[i + 1]) output = args[++i]!;
    else if (arg.startsWith("--output=") && arg.length > 9) output = arg.slice(9);
    else if (arg === "--no-minify") minify = false;
    else throw new TypeError(`Unknown argument "${arg}": use --output PATH, --no-minify`);
  }
  return { output, minify };
}

if (import.meta.main) {
  const encoder = new TextEncoder();
  const err = (line: string) => Deno.stderr.writeSync(encoder.encode(line + "\n"));
  let flags: BundleFlags;
  try {
    flags = parseBundleFlags(Deno.args);
  } catch (e) {
    err(`bundle: ${(e as Error).message}`);
    Deno.exit(2);
  }
  let result: BundleResult;
  try {
    result = await buildBundle(flags.output, { minify: flags.minify });
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
  err(`bundle: wrote ${flags.output} (pods-api ${result.version})`);
}
