/**
 * `deno task install`: puts a `pods-api` command on the PATH that runs this
 * checkout's `main.ts` with the Deno that ran the install (2.9.3 via npx),
 * quietly, with the permissions of `deno task start` and `deno task client`.
 * So `pods-api list` prints only its output: no `Task ...` line, no download
 * progress. The command follows the checkout: pull, and it runs the new code.
 *
 * Where: `--dir DIR`, else `--prefix PREFIX` (into `PREFIX/bin`), else
 * `$PODS_API_INSTALL_DIR`, else `~/.local/bin`, for root too (the variable
 * lets a README example, run as written, install somewhere else).
 * It never writes where a packaged form lives ({@linkcode PACKAGED_PATHS}:
 * `/usr/local/bin/pods-api` is the compiled binary that deploy/pods-api.service
 * runs), and it replaces only a command it wrote itself (one holding
 * {@linkcode LAUNCHER_MARKER}): any other file at the path is left alone.
 * When the Deno of the install is gone later (npx's cache cleared), the
 * command falls back to `npx -y deno@2.9.3`. Exit codes: 0 installed, 1 could
 * not or would not write, 2 bad flags.
 *
 * Run from the repository root (task `install`):
 * `deno run --allow-read --allow-write --allow-env scripts/install.ts [--dir DIR | --prefix PREFIX]`
 *
 * @module
 */

import { parseArgs } from "node:util";
import { ROOT_DIR } from "./stamp_version.ts";

/** The Deno version the checkout pins. */
export const DENO_VERSION = "2.9.3";

/** `deno run` flags of the command: those of `deno task start` and `deno task client`, quiet. */
export const COMMAND_RUN_FLAGS: readonly string[] = [
  "run",
  "--quiet",
  "--frozen",
  "--allow-read",
  "--allow-write",
  "--allow-net",
  "--allow-env",
  "--allow-sys",
];

function quote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/**
 * What every command the install writes says in its first lines (and those
 * of earlier versions did too): the install replaces a file only when it does.
 */
export const LAUNCHER_MARKER = "written by `deno task install`";

/**
 * Where the packaged forms put `pods-api` (docs/OPERATIONS.md): the compiled
 * binary, which deploy/pods-api.service runs. A launcher of a checkout there
 * would be run by the unit with unscoped permissions, so the install never
 * writes it, whatever is there now.
 */
export const PACKAGED_PATHS: readonly string[] = ["/usr/local/bin/pods-api"];

/**
 * The command's shell script.
 *
 * @param deno The Deno executable to run.
 * @param main The checkout's `main.ts`.
 * @returns The script.
 */
export function commandScript(deno: string, main: string): string {
  const flags = `${COMMAND_RUN_FLAGS.join(" ")} --config "$root/deno.json"`;
  return `#!/bin/sh
# pods-api from the checkout ${main}, ${LAUNCHER_MARKER}.
deno=${quote(deno)}
main=${quote(main)}
root=$(dirname "$main")
[ -x "$deno" ] || exec npx -y deno@${DENO_VERSION} ${flags} "$main" "$@"
exec "$deno" ${flags} "$main" "$@"
`;
}

function say(file: typeof Deno.stdout, text: string): void {
  file.writeSync(new TextEncoder().encode(text + "\n"));
}

/** The flags of `deno task install`. */
export const INSTALL_OPTIONS = {
  dir: { type: "string" },
  prefix: { type: "string" },
} as const;

/** The environment variable naming the directory when neither `--dir` nor `--prefix` is given. */
export const INSTALL_DIR_ENV = "PODS_API_INSTALL_DIR";

function defaultDir(): string {
  const dir = Deno.env.get(INSTALL_DIR_ENV);
  if (dir !== undefined && dir !== "") return dir;
  return `${Deno.env.get("HOME") ?? "."}/.local/bin`;
}

function trimSlashes(path: string): string {
  return path.length > 1 ? path.replace(/\/+$/, "") : path;
}

/** The directory as the system resolves it (symlinks followed), as far as it exists. */
async function resolvedDir(dir: string): Promise<string> {
  const parts = trimSlashes(dir).split("/");
  for (let i = parts.length; i > 0; i--) {
    const head = parts.slice(0, i).join("/") || "/";
    try {
      const real = await Deno.realPath(head);
      return [trimSlashes(real), ...parts.slice(i)].join("/");
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
  }
  return dir;
}

/**
 * Why the install must not write `target`, or `undefined` when it may.
 *
 * @param target The command's path.
 * @param resolved The same path with its directory's symlinks resolved.
 * @returns One sentence, or `undefined`.
 */
async function refusal(target: string, resolved: string): Promise<string | undefined> {
  if (PACKAGED_PATHS.includes(target) || PACKAGED_PATHS.includes(resolved)) {
    return "the compiled pods-api lives there (deploy/pods-api.service runs it); install the " +
      "command elsewhere: ~/.local/bin by default, or --prefix PREFIX, or --dir DIR";
  }
  let info: Deno.FileInfo;
  try {
    info = await Deno.lstat(target);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
  let head = "";
  if (info.isFile) {
    using file = await Deno.open(target);
    const buffer = new Uint8Array(512);
    const n = await file.read(buffer);
    head = new TextDecoder().decode(buffer.subarray(0, n ?? 0));
  }
  if (info.isFile && head.startsWith("#!/bin/sh\n") && head.includes(LAUNCHER_MARKER)) {
    return undefined;
  }
  return "a file that deno task install did not write is there (a packaged pods-api?): " +
    "remove it yourself if it should go, or choose --prefix PREFIX or --dir DIR";
}

async function main(args: string[]): Promise<number> {
  let dir: string;
  try {
    const { values } = parseArgs({ args, options: INSTALL_OPTIONS, strict: true });
    if (values.dir !== undefined && values.prefix !== undefined) {
      throw new TypeError("give --dir or --prefix, not both");
    }
    if (values.dir === "" || values.prefix === "") {
      throw new TypeError("--dir and --prefix need a path");
    }
    dir = values.dir ??
      (values.prefix === undefined ? defaultDir() : `${trimSlashes(values.prefix)}/bin`);
  } catch (e) {
    say(Deno.stderr, `install: ${(e as Error).message}`);
    return 2;
  }
  dir = trimSlashes(dir);
  const target = `${dir}/pods-api`;
  const main = new URL("main.ts", ROOT_DIR).pathname;
  try {
    const refused = await refusal(target, `${await resolvedDir(dir)}/pods-api`);
    if (refused !== undefined) {
      say(Deno.stderr, `install: will not write ${target}: ${refused}`);
      return 1;
    }
    await Deno.mkdir(dir, { recursive: true });
    await Deno.writeTextFile(target, commandScript(Deno.execPath(), main), { mode: 0o755 });
    await Deno.chmod(target, 0o755);
  } catch (e) {
    say(
      Deno.stderr,
      `install: cannot write ${target}: ${
        (e as Error).message
      } (give --prefix PREFIX or --dir DIR)`,
    );
    return 1;
  }
  const onPath = (Deno.env.get("PATH") ?? "").split(":").some((p) => trimSlashes(p) === dir);
  say(Deno.stdout, `installed ${target}: pods-api runs ${main} with Deno ${Deno.version.deno}`);
  if (!onPath) say(Deno.stdout, `${dir} is not on your PATH: add it, or run ${target}`);
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
