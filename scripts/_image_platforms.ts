/**
 * The platforms the image is built for, and what each ships: Deno's binary
 * for the architecture (the npm package `@deno/linux-<arch>-glibc` of the
 * pinned version) and the shared libraries it needs. For the build machine's
 * own architecture `ldd` names them; for the other one the binary's ELF
 * program interpreter and `NEEDED` entries (`readelf`) are looked up in
 * Debian's cross-libraries (`libc6-arm64-cross`, `libgcc-s1-arm64-cross`
 * install `/usr/aarch64-linux-gnu/lib`; `libc6-amd64-cross` the amd64 ones
 * on an arm64 machine) and placed where the loader looks in the image
 * (`/lib/<triple>/`).
 *
 * @module
 */

/** OCI's (Go's) names of the architectures the image is built for. */
export type ImageArchitecture = "amd64" | "arm64";

/** Every architecture the image is built for, in the index's order. */
export const IMAGE_ARCHITECTURES: readonly ImageArchitecture[] = ["amd64", "arm64"];

/** What one platform of the image ships. */
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
 * Where Debian's cross-libraries for an architecture are installed.
 *
 * @param architecture The architecture.
 * @returns E.g. `/usr/aarch64-linux-gnu/lib`.
 */
export function crossLibraryDir(architecture: ImageArchitecture): string {
  return `/usr/${TRIPLES[architecture]}/lib`;
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

async function exists(path: string): Promise<boolean> {
  try {
    return (await Deno.stat(path)).isFile;
  } catch {
    return false;
  }
}

/**
 * The libraries a binary of another architecture needs, from Debian's
 * cross-libraries: the interpreter at the path the binary names, every
 * other library (with what it needs in turn) under `/lib/<triple>/`, where
 * the loader looks first.
 *
 * @param binary The binary.
 * @param architecture Its architecture.
 * @param libraryDir Where the libraries are read. @default {crossLibraryDir(architecture)}
 * @returns Sources and image paths, the interpreter first.
 * @throws {Error} When a library is missing (naming the Debian packages to install).
 */
export async function crossLibraries(
  binary: string,
  architecture: ImageArchitecture,
  libraryDir: string = crossLibraryDir(architecture),
): Promise<{ source: string; path: string }[]> {
  const top = await readelf(binary);
  const out: { source: string; path: string }[] = [];
  const seen = new Set<string>();
  const missing = (name: string) =>
    new Error(
      `No ${architecture} library ${name} in ${libraryDir}: install Debian's libc6-${architecture}-cross and libgcc-s1-${architecture}-cross`,
    );
  if (top.interpreter !== undefined) {
    const name = top.interpreter.slice(top.interpreter.lastIndexOf("/") + 1);
    if (!await exists(`${libraryDir}/${name}`)) throw missing(name);
    out.push({ source: `${libraryDir}/${name}`, path: top.interpreter });
    seen.add(name);
  }
  const queue = [...top.needed];
  while (queue.length > 0) {
    const name = queue.shift()!;
    if (seen.has(name)) continue;
    seen.add(name);
    const source = `${libraryDir}/${name}`;
    if (!await exists(source)) throw missing(name);
    out.push({ source, path: `/lib/${TRIPLES[architecture]}/${name}` });
    queue.push(...(await readelf(source)).needed);
  }
  return out;
}
