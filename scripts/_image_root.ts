/**
 * A platform's root file system laid out as the image will hold it, and a
 * program run inside it (private to `scripts/image.ts` and the memory
 * benchmark).
 *
 * Why the image build runs Deno at all: before it runs a module, Deno reads
 * its imports and keeps the answer in `DENO_DIR`, keyed by the module's path
 * and content. A daemon that finds no answer parses its own 570 KB bundle at
 * start, and glibc keeps what that parse freed resident for the daemon's
 * whole life (about 15 MB at 110 pods; BENCHMARKS.md, "Memory"). Only a run
 * of the bundle at its path in the image gives an answer the image's first
 * start will find, so the build lays the root out, runs the image's own
 * entrypoint there (`version`: it loads the bundle and exits), and ships the
 * `DENO_DIR` those runs left.
 *
 * The run is `unshare --map-root-user --root`: a user namespace, so it needs
 * no privilege where unprivileged user namespaces are allowed (Debian's
 * default), and a PID namespace with its own `/proc`, which Deno reads.
 *
 * @module
 */

import { DatabaseSync } from "node:sqlite";

const DECODER = new TextDecoder();

/** util-linux's `unshare` (Debian's path; the child's PATH is the image's, so it is named in full). */
const UNSHARE = "/usr/bin/unshare";

/** One file to place in a root: read from `source` on this machine, or `data`. */
export type RootFile =
  & {
    /** Its absolute path in the root. */
    readonly path: string;
    readonly mode: number;
  }
  & ({ readonly source: string } | { readonly data: Uint8Array });

/**
 * Lays out a root file system: the files at their paths, and the empty
 * `/proc` and `/tmp` a program run there needs. Replaces what `root` held.
 *
 * @param root The directory that becomes `/`.
 * @param files What it holds.
 */
export async function layOutRoot(root: string, files: readonly RootFile[]): Promise<void> {
  await Deno.remove(root, { recursive: true }).catch((e) => {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  });
  for (const dir of ["proc", "tmp"]) await Deno.mkdir(`${root}/${dir}`, { recursive: true });
  for (const file of files) {
    const target = `${root}${file.path}`;
    await Deno.mkdir(target.slice(0, target.lastIndexOf("/")), { recursive: true });
    if ("source" in file) await Deno.copyFile(file.source, target);
    else await Deno.writeFile(target, file.data);
    await Deno.chmod(target, file.mode);
  }
}

/**
 * The command that runs `argv` with `root` as `/` (see the module doc).
 *
 * @param root The root file system.
 * @param argv The program (a path in the root) and its arguments.
 * @returns The argv to spawn.
 */
export function inRootCommand(root: string, argv: readonly string[]): string[] {
  return [
    UNSHARE,
    "--map-root-user",
    "--mount",
    "--pid",
    "--fork",
    // The program goes with unshare: nothing is left running if unshare is stopped.
    "--kill-child",
    "--mount-proc=/proc",
    `--root=${root}`,
    ...argv,
  ];
}

/**
 * Runs a program in a root file system and waits for it.
 *
 * @param root The root file system.
 * @param argv The program (a path in the root) and its arguments.
 * @param env Its whole environment (nothing of this process's is passed on).
 * @returns Its exit code and what it printed.
 */
export async function runInRoot(
  root: string,
  argv: readonly string[],
  env: Readonly<Record<string, string>>,
): Promise<{ code: number; output: string }> {
  const [cmd, ...args] = inRootCommand(root, argv);
  try {
    const out = await new Deno.Command(cmd!, {
      args,
      env: { ...env },
      clearEnv: true,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    return { code: out.code, output: DECODER.decode(out.stdout) + DECODER.decode(out.stderr) };
  } catch (e) {
    return { code: 127, output: `cannot run unshare: ${(e as Error).message}` };
  }
}

/**
 * Folds each SQLite database's write-ahead log under `dir` into the
 * database, so the directory holds whole databases and no `-wal`/`-shm`
 * files (Deno leaves its caches' logs behind when it exits).
 *
 * @param dir A Deno cache directory.
 * @returns The databases' names.
 */
export async function checkpointCaches(dir: string): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (entry.isFile && !/-(wal|shm|journal)$/.test(entry.name)) names.push(entry.name);
  }
  names.sort();
  for (const name of names) {
    const db = new DatabaseSync(`${dir}/${name}`);
    try {
      db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    } finally {
      db.close();
    }
    for (const suffix of ["-wal", "-shm"]) {
      await Deno.remove(`${dir}/${name}${suffix}`).catch((e) => {
        if (!(e instanceof Deno.errors.NotFound)) throw e;
      });
    }
  }
  return names;
}

/**
 * Runs a program in a root until Deno's cache under `DENO_DIR` is settled,
 * and returns that directory. The first run leaves the analysis; the second
 * finds it, and as it closes the databases Deno writes their statistics
 * (`sqlite_stat1`). After that a run writes nothing, so the image's first
 * start finds the cache as every later start does.
 *
 * @param root The root file system (see {@linkcode layOutRoot}).
 * @param argv The image's entrypoint and an argument that loads the bundle and exits.
 * @param env The image's environment; its `DENO_DIR` is the directory filled.
 * @returns The filled directory on this machine, or why it could not be filled.
 */
export async function analyseInRoot(
  root: string,
  argv: readonly string[],
  env: Readonly<Record<string, string>>,
): Promise<{ denoDir: string } | { error: string }> {
  const inImage = env.DENO_DIR;
  if (inImage === undefined) return { error: "the environment sets no DENO_DIR" };
  const denoDir = `${root}${inImage}`;
  for (let run = 0; run < 2; run++) {
    const { code, output } = await runInRoot(root, argv, env);
    if (code !== 0) {
      return { error: `${argv.at(-1)} in the image's root exited ${code}: ${output.trim()}` };
    }
    const databases = await checkpointCaches(denoDir).catch(() => []);
    if (databases.length === 0) return { error: `Deno left no cache in ${inImage}` };
  }
  return { denoDir };
}
