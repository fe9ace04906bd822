/**
 * Stages the build context `deploy/Containerfile` expects (private to
 * `scripts/image.ts` and the memory benchmark): per architecture, Deno's
 * binary (the npm package `@deno/linux-<x64|arm64>-glibc` of the pinned
 * version) and the shared libraries it needs at their paths in the image;
 * the account files; the bundle. (`scripts/image.ts` adds Deno's analysis of
 * the bundle.)
 *
 * The libraries are the binary's ELF program interpreter and `NEEDED`
 * entries (`readelf`), followed through what each needs in turn: the build
 * machine's own for its architecture (`/lib/<triple>`), Debian's
 * cross-libraries for the other (`libc6-arm64-cross` and
 * `libgcc-s1-arm64-cross` install `/usr/aarch64-linux-gnu/lib`), placed where
 * the loader looks in the image (`/lib/<triple>/`).
 *
 * @module
 */

import { ROOT_DIR } from "./stamp_version.ts";

/** OCI's (Go's, `TARGETARCH`'s) names of the architectures the image is built for. */
export type ImageArchitecture = "amd64" | "arm64";

/** Every architecture the image is built for, in the image index's order. */
export const IMAGE_ARCHITECTURES: readonly ImageArchitecture[] = ["amd64", "arm64"];

/** What one architecture's image ships beside the bundle. */
export interface PlatformInput {
  readonly architecture: ImageArchitecture;
  /** The Deno binary. */
  readonly deno: string;
  /** Each library: where it is read on the build machine, and its path in the image. */
  readonly libraries: readonly { readonly source: string; readonly path: string }[];
}

const TRIPLES: Readonly<Record<ImageArchitecture, string>> = {
  amd64: "x86_64-linux-gnu",
  arm64: "aarch64-linux-gnu",
};

const NPM_ARCH: Readonly<Record<ImageArchitecture, string>> = { amd64: "x64", arm64: "arm64" };

const DECODER = new TextDecoder();

/** @returns The build machine's architecture, as OCI names it. */
export function hostArchitecture(): ImageArchitecture {
  return Deno.build.arch === "aarch64" ? "arm64" : "amd64";
}

/**
 * The npm package that ships Deno's binary for an architecture.
 *
 * @param architecture The architecture. @default {hostArchitecture()}
 * @returns E.g. `@deno/linux-arm64-glibc`.
 */
export function denoNpmPackage(architecture: ImageArchitecture = hostArchitecture()): string {
  return `@deno/linux-${NPM_ARCH[architecture]}-glibc`;
}

/**
 * Where an architecture's libraries are on the build machine: its own, or
 * Debian's cross-libraries.
 *
 * @param architecture The architecture.
 * @returns E.g. `/usr/aarch64-linux-gnu/lib` on an amd64 machine.
 */
export function libraryDir(architecture: ImageArchitecture): string {
  const triple = TRIPLES[architecture];
  return architecture === hostArchitecture() ? `/lib/${triple}` : `/usr/${triple}/lib`;
}

/**
 * The program interpreter and `NEEDED` libraries of an ELF file, as
 * `readelf --program-headers --dynamic` prints them.
 *
 * @param output `readelf`'s output.
 * @returns The interpreter's path (if any) and the needed names, in order.
 */
export function parseReadelf(output: string): { interpreter?: string; needed: string[] } {
  const interpreter = /\[Requesting program interpreter: ([^\]]+)\]/.exec(output)?.[1];
  const needed = [...output.matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)].map((m) =>
    m[1]!
  );
  return { ...(interpreter === undefined ? {} : { interpreter }), needed };
}

async function readelf(file: string): Promise<{ interpreter?: string; needed: string[] }> {
  const r = await new Deno.Command("readelf", {
    args: ["--wide", "--program-headers", "--dynamic", file],
    stdout: "piped",
    stderr: "piped",
  }).output().catch((e) => {
    throw new Error(`Cannot run readelf (Debian package binutils): ${(e as Error).message}`);
  });
  if (!r.success) throw new Error(`readelf ${file} failed: ${DECODER.decode(r.stderr).trim()}`);
  return parseReadelf(DECODER.decode(r.stdout));
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await Deno.stat(path)).isFile;
  } catch {
    return false;
  }
}

/**
 * The libraries a binary needs: the interpreter at the path the binary
 * names, every other library (with what it needs in turn) under
 * `/lib/<triple>/`, where the loader looks first.
 *
 * @param binary The binary.
 * @param architecture Its architecture.
 * @param dir Where the libraries are read. @default {libraryDir(architecture)}
 * @returns Sources and image paths, the interpreter first.
 * @throws {Error} When a library is missing (naming the Debian packages to install).
 */
export async function platformLibraries(
  binary: string,
  architecture: ImageArchitecture,
  dir: string = libraryDir(architecture),
): Promise<{ source: string; path: string }[]> {
  const top = await readelf(binary);
  const out: { source: string; path: string }[] = [];
  const seen = new Set<string>();
  const missing = (name: string) =>
    new Error(
      `No ${architecture} library ${name} in ${dir}: install Debian's libc6-${architecture}-cross and libgcc-s1-${architecture}-cross`,
    );
  if (top.interpreter !== undefined) {
    const name = top.interpreter.slice(top.interpreter.lastIndexOf("/") + 1);
    if (!await isFile(`${dir}/${name}`)) throw missing(name);
    out.push({ source: `${dir}/${name}`, path: top.interpreter });
    seen.add(name);
  }
  const queue = [...top.needed];
  while (queue.length > 0) {
    const name = queue.shift()!;
    if (seen.has(name)) continue;
    seen.add(name);
    const source = `${dir}/${name}`;
    if (!await isFile(source)) throw missing(name);
    out.push({ source, path: `/lib/${TRIPLES[architecture]}/${name}` });
    queue.push(...(await readelf(source)).needed);
  }
  return out;
}

async function packageVersionAt(dir: string, architecture: ImageArchitecture) {
  try {
    const pkg = JSON.parse(await Deno.readTextFile(`${dir}/package.json`));
    return pkg.name === denoNpmPackage(architecture) ? pkg.version : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Finds the npm package's Deno binary of `version` for an architecture: the
 * one running this script when it is that package (`npx -y deno@VERSION`),
 * else one in npm's `npx` cache, else `npm pack` of the package (from npm's
 * cache when offline) unpacked under `workDir`.
 *
 * @param version The Deno version wanted.
 * @param workDir A scratch directory for `npm pack`.
 * @param architecture The architecture.
 * @returns The binary's path.
 * @throws {Error} When none of these has it.
 */
export async function findDenoBinary(
  version: string,
  workDir: string,
  architecture: ImageArchitecture,
): Promise<string> {
  const self = await Deno.realPath(Deno.execPath());
  const selfDir = self.slice(0, self.lastIndexOf("/"));
  if (await packageVersionAt(selfDir, architecture) === version) return self;
  const npx = `${Deno.env.get("HOME") ?? "/root"}/.npm/_npx`;
  const cached = await Array.fromAsync(Deno.readDir(npx)).catch(() => []);
  for (const entry of cached) {
    const dir = `${npx}/${entry.name}/node_modules/${denoNpmPackage(architecture)}`;
    if (await packageVersionAt(dir, architecture) === version) return `${dir}/deno`;
  }
  workDir = `${workDir}/npm-${architecture}`;
  await Deno.mkdir(workDir, { recursive: true });
  const spec = `${denoNpmPackage(architecture)}@${version}`;
  const pack = await new Deno.Command("npm", {
    args: ["pack", "--silent", spec],
    cwd: workDir,
    stdout: "piped",
    stderr: "piped",
  }).output().catch((err) => ({ success: false, stdout: new Uint8Array(), stderr: err.message }));
  const tgz = DECODER.decode(pack.stdout).trim().split("\n").at(-1) ?? "";
  if (!pack.success || tgz === "") {
    throw new Error(
      `Cannot find Deno ${version}: not running it, not in npx's cache, and npm pack ${spec} failed`,
    );
  }
  const untar = await new Deno.Command("tar", {
    args: ["-xzf", tgz, "package/deno"],
    cwd: workDir,
  }).output();
  if (!untar.success) throw new Error(`Cannot unpack ${tgz}`);
  return `${workDir}/package/deno`;
}

/**
 * One architecture's Deno binary and the libraries it needs.
 *
 * @param deno The Deno binary of that architecture.
 * @param architecture The architecture.
 * @param dir Where its libraries are read (tests). @default {libraryDir(architecture)}
 * @returns The platform.
 */
export async function platformInput(
  deno: string,
  architecture: ImageArchitecture,
  dir?: string,
): Promise<PlatformInput> {
  return { architecture, deno, libraries: await platformLibraries(deno, architecture, dir) };
}

async function copyInto(source: string, target: string, mode: number): Promise<void> {
  await Deno.mkdir(target.slice(0, target.lastIndexOf("/")), { recursive: true });
  await Deno.copyFile(source, target);
  await Deno.chmod(target, mode);
}

/**
 * Writes the build context `deploy/Containerfile` expects (its header lists
 * it) into `dir`, replacing what it held, except `deno-dir/`: Deno's
 * analysis, which `scripts/image.ts` adds.
 *
 * @param dir The context directory.
 * @param platforms Each architecture's Deno binary and libraries.
 * @param bundle The bundle.
 */
export async function stageContext(
  dir: string,
  platforms: readonly PlatformInput[],
  bundle: string,
): Promise<void> {
  await Deno.remove(dir, { recursive: true }).catch((e) => {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  });
  const rootfs = new URL("deploy/rootfs/", ROOT_DIR).pathname;
  for (const name of ["passwd", "group"]) {
    await copyInto(`${rootfs}etc/${name}`, `${dir}/rootfs/etc/${name}`, 0o644);
  }
  await Deno.mkdir(`${dir}/rootfs/var/cache/pods-api`, { recursive: true });
  await Deno.mkdir(`${dir}/rootfs/tmp`);
  await Deno.chmod(`${dir}/rootfs/tmp`, 0o1777);
  for (const p of platforms) {
    await copyInto(p.deno, `${dir}/${p.architecture}/deno`, 0o755);
    for (const lib of p.libraries) {
      await copyInto(lib.source, `${dir}/${p.architecture}/libs${lib.path}`, 0o755);
    }
  }
  await copyInto(bundle, `${dir}/pods-api.js`, 0o644);
  await Deno.mkdir(`${dir}/deno-dir`);
}
