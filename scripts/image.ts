/**
 * Builds the DaemonSet's image from `deploy/Containerfile` with Debian's
 * `buildah`, offline: one manifest list for `linux/amd64` and `linux/arm64`,
 * written as an OCI archive (`dist/pods-api-image.tar`) that
 * `ctr -n k8s.io images import`, `podman load` and `skopeo` take.
 *
 * Steps: stage the build context the Containerfile names
 * (scripts/_image_context.ts: each architecture's Deno of the pinned version
 * ({@linkcode PINNED_DENO_VERSION}) and libraries, the account files, the
 * bundle); have the image's own entrypoint analyse the bundle in the build
 * machine's platform's root, laid out as the image holds it
 * (scripts/_image_root.ts says why and how), and add that `DENO_DIR` to the
 * context; `buildah build` each platform into one manifest list (one after the
 * other: the list's order is then fixed), with `--timestamp` the commit's
 * time, so that a commit always builds the same digests; `buildah manifest
 * push --all` to the archive, and to a registry with `--push`. buildah's
 * storage is a private directory under `dist/`, removed afterwards.
 *
 * Run from the repository root (task `image`):
 * `deno run --allow-run --allow-read --allow-write=dist --allow-env --allow-net scripts/image.ts [flags]`
 *
 * Flags:
 * - `--output PATH`: the archive (default {@linkcode DEFAULT_ARCHIVE})
 * - `--name REF`: the image's name (default {@linkcode DEFAULT_IMAGE_NAME})
 * - `--platforms LIST`: `amd64,arm64` (the default), or one of them
 * - `--bundle PATH`: ship this bundle instead of building one
 * - `--source URL`: the source label (default: the Containerfile's)
 * - `--context-only`: stage the build context in {@linkcode DEFAULT_CONTEXT} and
 *   stop, for `docker buildx build` or `podman build`
 * - `--push REF`: also push the manifest list (`host[:port]/repo:tag`;
 *   credentials from `REGISTRY_USER` / `REGISTRY_PASSWORD`; plain HTTP for
 *   localhost, or with `--plain-http`)
 *
 * Prints the image's name, the digests and sizes. Exit codes: 0 built (and
 * pushed), 1 build or push failed or an image is over
 * {@linkcode MAX_IMAGE_BYTES}, 2 bad flags.
 *
 * @module
 */

import { DAEMON_MALLOC_ENV } from "./_malloc_env.ts";
import { bundleCommand } from "./_permissions.ts";
import { analyseInRoot, layOutRoot } from "./_image_root.ts";
import {
  findDenoBinary,
  hostArchitecture,
  IMAGE_ARCHITECTURES,
  type ImageArchitecture,
  type PlatformInput,
  platformInput,
  stageContext,
} from "./_image_context.ts";
import { buildBundle } from "./bundle.ts";
import { describeVersion, ROOT_DIR } from "./stamp_version.ts";

export { hostArchitecture, type ImageArchitecture, type PlatformInput, platformInput };

/** The Deno version the image carries (the project's pin). */
export const PINNED_DENO_VERSION = "2.9.3";

/** The version in `deno.json`, the image's tag. */
const PACKAGE_VERSION: string = JSON.parse(
  await Deno.readTextFile(new URL("deno.json", ROOT_DIR)),
).version;

/** The image's default name: `deploy/base/daemonset.yaml` names this very image. */
export const DEFAULT_IMAGE_NAME = `localhost/pods-api:${PACKAGE_VERSION}`;

/** The archive's default path, relative to the repository root. */
export const DEFAULT_ARCHIVE = "dist/pods-api-image.tar";

/** Where the build context is staged, relative to the repository root. */
export const DEFAULT_CONTEXT = "dist/image-context";

/** The image's description, relative to the repository root. */
export const CONTAINERFILE = "deploy/Containerfile";

/** Where things are inside the image (the Containerfile's paths). */
export const IMAGE_PATHS = {
  deno: "/usr/local/bin/deno",
  bundle: "/usr/local/lib/pods-api/pods-api.js",
  /** Deno's cache (`DENO_DIR`), holding its analysis of the bundle; the DaemonSet mounts an `emptyDir` here. */
  denoDir: "/var/cache/pods-api/deno",
} as const;

/** The image's non-root user (distroless's `nonroot` ids), as `deploy/rootfs/etc/passwd` has it. */
export const IMAGE_USER = { name: "pods-api", uid: 65532, gid: 65532 } as const;

/** The size each platform's image may have, uncompressed. */
export const MAX_IMAGE_BYTES = 120 * 1000 * 1000;

const DECODER = new TextDecoder();

/**
 * The image's entrypoint: Deno running the bundle with the daemon's
 * permissions, the very command the docs give for a systemd install.
 *
 * @returns The entrypoint argv (the Containerfile's `ENTRYPOINT`).
 */
export function imageEntrypoint(): string[] {
  return bundleCommand(IMAGE_PATHS.deno, IMAGE_PATHS.bundle);
}

/**
 * The image's environment, as its entrypoint is run with it.
 *
 * @returns Names to values (the Containerfile's `ENV`), in its order.
 */
export function imageEnvRecord(): Record<string, string> {
  return {
    PATH: "/usr/local/bin",
    DENO_NO_UPDATE_CHECK: "1",
    NO_COLOR: "1",
    DENO_DIR: IMAGE_PATHS.denoDir,
    ...DAEMON_MALLOC_ENV,
  };
}

/**
 * The image's environment as its config's `Env` has it.
 *
 * @returns `NAME=value` entries.
 */
export function imageEnv(): string[] {
  return Object.entries(imageEnvRecord()).map(([name, value]) => `${name}=${value}`);
}

/**
 * Has the image's own entrypoint analyse the bundle once in a platform's
 * root, laid out as the image holds it (scripts/_image_root.ts).
 *
 * @param platform The build machine's platform (its Deno runs here).
 * @param bundle The bundle to ship.
 * @param root A scratch directory for the root file system.
 * @returns The filled cache directory, or why not.
 */
export async function analyseBundleForImage(
  platform: PlatformInput,
  bundle: string,
  root: string,
): Promise<{ denoDir: string } | { error: string }> {
  const etc = new URL("deploy/rootfs/etc/", ROOT_DIR).pathname;
  await layOutRoot(root, [
    ...platform.libraries.map((lib) => ({ ...lib, mode: 0o755 })),
    { source: `${etc}passwd`, path: "/etc/passwd", mode: 0o644 },
    { source: `${etc}group`, path: "/etc/group", mode: 0o644 },
    { source: platform.deno, path: IMAGE_PATHS.deno, mode: 0o755 },
    { source: bundle, path: IMAGE_PATHS.bundle, mode: 0o644 },
  ]);
  return await analyseInRoot(root, [...imageEntrypoint(), "version"], imageEnvRecord());
}

/** What the image is built from and named, for {@linkcode buildahCommands}. */
export interface BuildahOptions {
  /** The image's (the manifest list's) name. */
  name: string;
  /** The staged build context. */
  context: string;
  /** The archive to write. */
  output: string;
  platforms: readonly ImageArchitecture[];
  /** The build's time, seconds since the epoch (the commit's: the same digests each build). */
  timestamp: number;
  /** The Containerfile's `ARG`s: `VERSION`, `REVISION`, `SOURCE`. */
  buildArgs: Readonly<Record<string, string>>;
}

/**
 * The `buildah` commands (after the storage flags) that build the image
 * and write the archive.
 *
 * @param options What to build.
 * @returns One argv per command.
 */
export function buildahCommands(options: BuildahOptions): string[][] {
  const args = Object.entries(options.buildArgs).flatMap(([k, v]) => ["--build-arg", `${k}=${v}`]);
  return [
    ...options.platforms.map((arch) => [
      "build",
      "--quiet",
      "--identity-label=false",
      `--platform=linux/${arch}`,
      `--manifest=${options.name}`,
      `--timestamp=${options.timestamp}`,
      ...args,
      `--file=${new URL(CONTAINERFILE, ROOT_DIR).pathname}`,
      options.context,
    ]),
    [
      "manifest",
      "push",
      "--quiet",
      "--all",
      options.name,
      `oci-archive:${options.output}:${options.name}`,
    ],
  ];
}

/** One platform's image in an archive. */
export interface ArchivedPlatform {
  readonly architecture: string;
  readonly manifestDigest: string;
  /** The layers' sizes as stored (what a pull transfers). */
  readonly compressedBytes: number;
  /** The layers' sizes unpacked: the root file system's. */
  readonly uncompressedBytes: number;
}

/**
 * Reads an OCI archive's manifest list and each platform's sizes.
 *
 * @param archive The OCI archive.
 * @param workDir A scratch directory (emptied first).
 * @returns The manifest list's digest and each platform's image.
 */
export async function readArchive(
  archive: string,
  workDir: string,
): Promise<{ indexDigest: string; platforms: ArchivedPlatform[] }> {
  await Deno.remove(workDir, { recursive: true }).catch(() => {});
  await Deno.mkdir(workDir, { recursive: true });
  await run("tar", ["-xf", archive, "-C", workDir]);
  const blob = (digest: string) => `${workDir}/blobs/sha256/${digest.slice("sha256:".length)}`;
  const json = async (path: string) => JSON.parse(await Deno.readTextFile(path));
  const indexDigest: string = (await json(`${workDir}/index.json`)).manifests[0].digest;
  const platforms: ArchivedPlatform[] = [];
  for (const m of (await json(blob(indexDigest))).manifests) {
    let compressedBytes = 0;
    let uncompressedBytes = 0;
    for (const layer of (await json(blob(m.digest))).layers) {
      compressedBytes += layer.size;
      const file = await Deno.open(blob(layer.digest));
      // The readable closes the file at its end.
      for await (const chunk of file.readable.pipeThrough(new DecompressionStream("gzip"))) {
        uncompressedBytes += chunk.length;
      }
    }
    platforms.push({
      architecture: m.platform.architecture,
      manifestDigest: m.digest,
      compressedBytes,
      uncompressedBytes,
    });
  }
  return { indexDigest, platforms };
}

/** The flags of the image script. */
export interface ImageFlags {
  output: string;
  name: string;
  bundle: string | undefined;
  source: string | undefined;
  push: string | undefined;
  plainHttp: boolean;
  contextOnly: boolean;
  /** The platforms to build, in the manifest list's order. */
  platforms: ImageArchitecture[];
}

/**
 * Parses the image script's flags.
 *
 * @param args The script's arguments.
 * @returns The flags with defaults filled in.
 * @throws {TypeError} For an unknown flag or a flag without its value.
 */
export function parseImageFlags(args: readonly string[]): ImageFlags {
  const flags: ImageFlags = {
    output: DEFAULT_ARCHIVE,
    name: DEFAULT_IMAGE_NAME,
    bundle: undefined,
    source: undefined,
    push: undefined,
    plainHttp: false,
    contextOnly: false,
    platforms: [...IMAGE_ARCHITECTURES],
  };
  const valued = ["--output", "--name", "--bundle", "--source", "--push", "--platforms"];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--plain-http" || arg === "--context-only") {
      flags[arg === "--plain-http" ? "plainHttp" : "contextOnly"] = true;
      continue;
    }
    const eq = arg.indexOf("=");
    const name = eq === -1 ? arg : arg.slice(0, eq);
    if (!valued.includes(name)) {
      throw new TypeError(
        `Unknown flag "${arg}": use ${valued.join(", ")}, --plain-http or --context-only`,
      );
    }
    const value = eq === -1 ? args[++i] : arg.slice(eq + 1);
    if (value === undefined || value === "") throw new TypeError(`Flag "${name}" needs a value`);
    if (name === "--platforms") {
      const list = value.split(",").map((p) => p.trim().replace(/^linux\//, ""));
      const bad = list.filter((p) => !(IMAGE_ARCHITECTURES as readonly string[]).includes(p));
      if (bad.length > 0 || list.length === 0) {
        throw new TypeError(
          `Flag "--platforms" takes ${
            IMAGE_ARCHITECTURES.join(", ")
          } (comma-separated), got "${value}"`,
        );
      }
      flags.platforms = [...new Set(list as ImageArchitecture[])];
      continue;
    }
    flags[name.slice(2) as "output" | "name" | "bundle" | "source" | "push"] = value;
  }
  const tagAt = flags.name.lastIndexOf(":");
  if (tagAt <= flags.name.lastIndexOf("/") || !/^[\w][\w.-]*$/.test(flags.name.slice(tagAt + 1))) {
    throw new TypeError(`Flag "--name" must be repository:tag, got "${flags.name}"`);
  }
  return flags;
}

/**
 * The `buildah` command (after the storage flags) that pushes the manifest
 * list and every platform's image to a registry.
 *
 * @param name The manifest list in buildah's storage.
 * @param reference Where to push it (`host[:port]/repo:tag`).
 * @param options Plain HTTP; a containers-auth.json(5) file with the credentials.
 * @returns The argv.
 */
export function pushCommand(
  name: string,
  reference: string,
  options: { plainHttp?: boolean; authFile?: string } = {},
): string[] {
  const host = reference.slice(0, reference.indexOf("/"));
  const plain = options.plainHttp || /^(localhost|127\.0\.0\.1)(:\d+)?$/.test(host);
  return [
    "manifest",
    "push",
    "--quiet",
    "--all",
    ...(plain ? ["--tls-verify=false"] : []),
    ...(options.authFile ? [`--authfile=${options.authFile}`] : []),
    name,
    `docker://${reference}`,
  ];
}

async function run(cmd: string, args: string[]): Promise<string> {
  const out = await new Deno.Command(cmd, { args, cwd: ROOT_DIR, stdout: "piped", stderr: "piped" })
    .output().catch((e) => {
      throw new Error(`Cannot run ${cmd}: ${(e as Error).message}`);
    });
  if (!out.success) {
    throw new Error(`${cmd} ${args.join(" ")} failed: ${DECODER.decode(out.stderr).trim()}`);
  }
  return DECODER.decode(out.stdout).trim();
}

async function git(args: string[]): Promise<string | undefined> {
  return await run("git", args).then((text) => text === "" ? undefined : text, () => undefined);
}

function mb(bytes: number): string {
  return `${(bytes / 1e6).toFixed(1)} MB`;
}

async function main(args: readonly string[]): Promise<number> {
  const err = (line: string) => Deno.stderr.writeSync(new TextEncoder().encode(line + "\n"));
  let flags: ImageFlags;
  try {
    flags = parseImageFlags(args);
  } catch (e) {
    err(`image: ${(e as Error).message}`);
    return 2;
  }
  const root = new URL(".", ROOT_DIR).pathname;
  const work = `${root}dist/.image-work-${crypto.randomUUID().slice(0, 8)}`;
  const context = flags.contextOnly ? `${root}${DEFAULT_CONTEXT}` : `${work}/context`;
  const storage = ["--storage-driver=vfs", `--root=${work}/storage`, `--runroot=${work}/run`];
  try {
    await Deno.mkdir(work, { recursive: true });
    const platforms: PlatformInput[] = [];
    for (const architecture of flags.platforms) {
      const deno = await findDenoBinary(PINNED_DENO_VERSION, work, architecture);
      platforms.push(await platformInput(deno, architecture));
    }
    let bundle = flags.bundle;
    let version: string;
    if (bundle === undefined) {
      bundle = `${work}/pods-api.js`;
      const built = await buildBundle(bundle);
      if (built.code !== 0) {
        err(`image: bundling failed\n${built.log}`);
        return 1;
      }
      version = built.version;
    } else {
      version = /var BUILD_VERSION\d* = "([^"]*)";/.exec(await Deno.readTextFile(bundle))?.[1] ??
        await describeVersion();
    }
    await stageContext(context, platforms, bundle);
    // Only the build machine's Deno runs here; the analysis is the same for both platforms.
    const host = platforms.find((p) => p.architecture === hostArchitecture()) ??
      await platformInput(
        await findDenoBinary(PINNED_DENO_VERSION, work, hostArchitecture()),
        hostArchitecture(),
      );
    const analysis = await analyseBundleForImage(host, bundle, `${work}/root`);
    if ("error" in analysis) throw new Error(`Deno's analysis of the bundle: ${analysis.error}`);
    // Deno's databases, without the `node` symlink to Deno that it makes beside them (and
    // makes again where it needs one): the image holds one program, under one name.
    await run("cp", ["-a", `${analysis.denoDir}/.`, `${context}/deno-dir/`]);
    await run("find", [`${context}/deno-dir`, "-type", "l", "-delete"]);
    if (flags.contextOnly) {
      err(`image: staged ${DEFAULT_CONTEXT} for ${CONTAINERFILE} (pods-api ${version})`);
      return 0;
    }
    const revision = await git(["rev-parse", "HEAD"]);
    const output = flags.output.startsWith("/") ? flags.output : `${root}${flags.output}`;
    await Deno.remove(output).catch(() => {});
    for (
      const command of buildahCommands({
        name: flags.name,
        context,
        output,
        platforms: flags.platforms,
        timestamp: Number(await git(["log", "-1", "--format=%ct"]) ?? "0"),
        buildArgs: {
          VERSION: version,
          ...(revision ? { REVISION: revision } : {}),
          ...(flags.source ? { SOURCE: flags.source } : {}),
        },
      })
    ) await run("buildah", [...storage, ...command]);
    const image = await readArchive(output, `${work}/archive`);
    err(
      `image: wrote ${flags.output}: ${flags.name} (pods-api ${version}, deno ${PINNED_DENO_VERSION}), ` +
        `index ${image.indexDigest}`,
    );
    for (const p of image.platforms) {
      err(
        `image: linux/${p.architecture}: manifest ${p.manifestDigest}, ` +
          `${mb(p.uncompressedBytes)} uncompressed, ${mb(p.compressedBytes)} compressed`,
      );
    }
    err(`image: import on a node with: ctr -n k8s.io images import ${flags.output}`);
    const over = image.platforms.filter((p) => p.uncompressedBytes >= MAX_IMAGE_BYTES);
    for (const p of over) {
      err(`image: linux/${p.architecture}: over the ${mb(MAX_IMAGE_BYTES)} budget`);
    }
    if (over.length > 0) return 1;
    if (flags.push !== undefined) {
      // Credentials go in a file, not on a command line every user of the machine can read.
      const user = Deno.env.get("REGISTRY_USER");
      const authFile = user === undefined ? undefined : `${work}/auth.json`;
      if (authFile !== undefined) {
        const auth = btoa(`${user}:${Deno.env.get("REGISTRY_PASSWORD") ?? ""}`);
        const host = flags.push.slice(0, flags.push.indexOf("/"));
        await Deno.writeTextFile(authFile, JSON.stringify({ auths: { [host]: { auth } } }), {
          mode: 0o600,
        });
      }
      const push = pushCommand(flags.name, flags.push, { plainHttp: flags.plainHttp, authFile });
      await run("buildah", [...storage, ...push]);
      err(`image: pushed ${flags.push} (${image.indexDigest})`);
    }
    return 0;
  } catch (e) {
    err(`image: ${(e as Error).message}`);
    return 1;
  } finally {
    await Deno.remove(work, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
