/**
 * Stamps the build's version into the built bundle (`dist/pods-api.js`), not
 * into the source: `src/version.ts` keeps the bare version, the work
 * tree stays clean, and two builds at once cannot trip over each other. The
 * executable embeds the stamped bundle, so `pods-api version` and the
 * start-up log line show the stamp.
 *
 * One version everywhere: `deno.json`'s `version` (which `src/version.ts`
 * repeats, checked by tests/ship/version_test.ts), and the image's tag. A
 * build from a clean commit tagged `v<version>` is that version (`0.1.0`);
 * any other build adds the commit as SemVer build metadata
 * (`0.1.0+1a2b3c4`, `0.1.0+1a2b3c4.dirty`), so a build says where it came
 * from without naming another version. Without git or a commit: the version.
 *
 * Run from the repository root:
 * `deno run --allow-run=git --allow-read scripts/stamp_version.ts` prints the
 * version a build would stamp.
 *
 * @module
 */

/** The repository root (this file's parent's parent). */
export const ROOT_DIR: URL = new URL("../", import.meta.url);

/** Options of {@linkcode describeVersion}. */
export interface DescribeVersionOptions {
  /** The repository to describe. @default {ROOT_DIR} */
  cwd?: URL;
  /** The `git` executable. @default {"git"} */
  git?: string;
}

async function packageVersion(cwd: URL): Promise<string> {
  try {
    const config = JSON.parse(await Deno.readTextFile(new URL("deno.json", cwd)));
    if (typeof config.version === "string" && config.version !== "") return config.version;
  } catch {
    // No deno.json, or no version in it: the generic fallback below.
  }
  return "0.0.0";
}

/**
 * Works out the version to stamp: the package version, plus the commit unless
 * the build is the clean commit tagged `v<version>`.
 *
 * @example Usage
 * ```ts
 * import { describeVersion } from "./stamp_version.ts";
 * const version = await describeVersion(); // "0.1.0", "0.1.0+1a2b3c4", ...
 * ```
 *
 * @param options The repository and the git executable.
 * @returns The version; never empty, whether or not git works here.
 */
export async function describeVersion(options: DescribeVersionOptions = {}): Promise<string> {
  const cwd = options.cwd ?? ROOT_DIR;
  const base = await packageVersion(cwd);
  let described: string;
  try {
    const { success, stdout } = await new Deno.Command(options.git ?? "git", {
      // `v<version>-0-g<hash>` on the tag, else `<hash>`; `-dirty` after either.
      args: ["describe", "--tags", "--long", "--always", "--dirty", "--match", `v${base}`],
      cwd,
      stdout: "piped",
      stderr: "null",
    }).output();
    if (!success) return base;
    described = new TextDecoder().decode(stdout).trim();
  } catch {
    // git is not installed: the build is still a build.
    return base;
  }
  const m = /^(?:v.*-(\d+)-g)?([0-9a-f]{4,40})(-dirty)?$/.exec(described);
  if (m === null) return base;
  if (m[1] === "0" && m[3] === undefined) return base;
  return `${base}+${m[2]}${m[3] ? ".dirty" : ""}`;
}

/** The declaration esbuild emits for `export const BUILD_VERSION = "...";`. */
const BUNDLED_VERSION = /^var BUILD_VERSION\d* = "[^"\n]*";$/gm;

/**
 * Replaces the value of `BUILD_VERSION` in a bundle's text.
 *
 * @example Usage
 * ```ts
 * import { stampBundle } from "./stamp_version.ts";
 * stampBundle('var BUILD_VERSION = "0.1.0";\n', "0.1.0+1a2b3c4"); // 'var BUILD_VERSION = "0.1.0+1a2b3c4";\n'
 * ```
 *
 * @param text The bundle's text.
 * @param version The version to put in.
 * @returns The stamped text.
 * @throws {TypeError} When the version holds a quote, backslash or line break.
 * @throws {SyntaxError} When the bundle does not declare `BUILD_VERSION` exactly once
 *   (a bundler change must fail the build, not ship an unstamped binary).
 */
export function stampBundle(text: string, version: string): string {
  if (version === "" || /["\\\n\r]/.test(version)) {
    throw new TypeError(
      `Cannot stamp version "${version}": empty, or holds a quote, backslash or line break`,
    );
  }
  const found = text.match(BUNDLED_VERSION) ?? [];
  if (found.length !== 1) {
    throw new SyntaxError(
      `Cannot stamp the bundle: expected one "var BUILD_VERSION = ..." declaration, found ${found.length}`,
    );
  }
  return text.replace(BUNDLED_VERSION, (line) => line.replace(/"[^"]*"/, JSON.stringify(version)));
}

/**
 * Stamps a bundle file in place.
 *
 * @param path The bundle.
 * @param version The version to put in.
 * @throws {SyntaxError} When the bundle does not declare `BUILD_VERSION` exactly once.
 */
export async function stampBundleFile(path: string | URL, version: string): Promise<void> {
  await Deno.writeTextFile(path, stampBundle(await Deno.readTextFile(path), version));
}

if (import.meta.main) {
  Deno.stdout.writeSync(new TextEncoder().encode(`${await describeVersion()}\n`));
}
