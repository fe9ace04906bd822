/**
 * `deno task install`: puts a `pods-api` command on the PATH that runs this
 * checkout's `main.ts` with the Deno that ran the install (2.9.3 via npx),
 * quietly, with the permissions of `deno task start` and `deno task client`.
 * So `pods-api list` prints only its output: no `Task ...` line, no download
 * progress. The command follows the checkout: pull, and it runs the new code.
 *
 * Where: `--dir DIR`, else `$PODS_API_INSTALL_DIR`, else `/usr/local/bin` for
 * root, else `~/.local/bin` (the variable lets a README example, run as
 * written, install somewhere else).
 * When the Deno of the install is gone later (npx's cache cleared), the
 * command falls back to `npx -y deno@2.9.3`. Exit codes: 0 installed, 1 could
 * not write, 2 bad flags.
 *
 * Run from the repository root (task `install`):
 * `deno run --allow-read --allow-write --allow-env scripts/install.ts [--dir DIR]`
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
 * The command's shell script.
 *
 * @param deno The Deno executable to run.
 * @param main The checkout's `main.ts`.
 * @returns The script.
 */
export function commandScript(deno: string, main: string): string {
  const flags = `${COMMAND_RUN_FLAGS.join(" ")} --config "$root/deno.json"`;
  return `#!/bin/sh
# pods-api from the checkout ${main}, written by \`deno task install\`.
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

/** The environment variable naming the directory when `--dir` is not given. */
export const INSTALL_DIR_ENV = "PODS_API_INSTALL_DIR";

function defaultDir(): string {
  const dir = Deno.env.get(INSTALL_DIR_ENV);
  if (dir !== undefined && dir !== "") return dir;
  if (Deno.uid() === 0) return "/usr/local/bin";
  return `${Deno.env.get("HOME") ?? "."}/.local/bin`;
}

async function main(args: string[]): Promise<number> {
  let dir: string;
  try {
    const { values } = parseArgs({ args, options: { dir: { type: "string" } }, strict: true });
    dir = values.dir ?? defaultDir();
  } catch (e) {
    say(Deno.stderr, `install: ${(e as Error).message}`);
    return 2;
  }
  const target = `${dir.replace(/\/+$/, "")}/pods-api`;
  const main = new URL("main.ts", ROOT_DIR).pathname;
  try {
    await Deno.mkdir(dir, { recursive: true });
    await Deno.writeTextFile(target, commandScript(Deno.execPath(), main), { mode: 0o755 });
    await Deno.chmod(target, 0o755);
  } catch (e) {
    say(Deno.stderr, `install: cannot write ${target}: ${(e as Error).message} (give --dir DIR)`);
    return 1;
  }
  const onPath = (Deno.env.get("PATH") ?? "").split(":").some((p) =>
    p.replace(/\/+$/, "") === dir.replace(/\/+$/, "")
  );
  say(Deno.stdout, `installed ${target}: pods-api runs ${main} with Deno ${Deno.version.deno}`);
  if (!onPath) say(Deno.stdout, `${dir} is not on your PATH: add it, or run ${target}`);
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
