/**
 * Builds the DaemonSet's image offline, without a base image, a registry or
 * a container engine: an OCI image archive (`dist/pods-api-image.tar`) that
 * `ctr -n k8s.io images import`, `podman load` and `docker load` take.
 *
 * One OCI image index for `linux/amd64` and `linux/arm64` (a DaemonSet's
 * image must run on both kinds of node). Each platform's image holds this,
 * nothing else (as a distroless image would):
 * - layer 1: the shared libraries its Deno binary needs (`_image_platforms.ts`:
 *   `ldd` on the build machine's architecture, Debian's cross-libraries for
 *   the other), and `/etc/passwd` and `/etc/group` with root and the
 *   non-root user `pods-api` (65532, the image's default user);
 * - layer 2: the Deno runtime, the npm package `@deno/linux-<arch>-glibc`
 *   of the pinned version ({@linkcode PINNED_DENO_VERSION}) at `/usr/local/bin/deno`;
 * - layer 3: the bundle (`deno task bundle`) at `/usr/local/lib/pods-api/pods-api.js`,
 *   the same blob for both;
 * - layer 4: Deno's analysis of the bundle at that path, in the image's
 *   `DENO_DIR` (`/var/cache/pods-api/deno`, the image's user's own), so that
 *   even the first start of a bare image does not parse the bundle
 *   (scripts/_image_root.ts says why that matters and how it is made). The
 *   same blob for both: it holds Deno's version, the bundle's path and hash
 *   and its imports, nothing of the machine. A build that cannot run Deno in
 *   a user namespace says so and leaves the layer out.
 *
 * The entrypoint runs the bundle with exactly the daemon's permissions
 * (scripts/_permissions.ts); the default command is `serve`. Labels carry the
 * version (as `pods-api version` prints it), revision and source.
 *
 * Run from the repository root (task `image`):
 * `deno run --allow-run --allow-read --allow-write=dist --allow-env --allow-net scripts/image.ts [flags]`
 *
 * Flags:
 * - `--output PATH`: the archive (default `dist/pods-api-image.tar`)
 * - `--name REF`: the image's name (default {@linkcode DEFAULT_IMAGE_NAME})
 * - `--deno PATH`: the Deno binary to ship for the build machine's architecture
 *   (default: the npm package's binary, see {@linkcode findDenoBinary})
 * - `--platforms LIST`: `amd64,arm64` (the default), or one of them
 * - `--bundle PATH`: ship this bundle instead of building one
 * - `--source URL`: the source label (default: git's `origin`, else {@linkcode DEFAULT_SOURCE})
 * - `--push REF`: also push the image to a registry (`host[:port]/repo:tag`;
 *   credentials from `REGISTRY_USER` / `REGISTRY_PASSWORD`; plain HTTP for
 *   localhost, or with `--plain-http`)
 *
 * Prints the image's name, manifest digest and sizes. Exit codes: 0 built
 * (and pushed), 1 build or push failed, 2 bad flags.
 *
 * @module
 */

import { DAEMON_MALLOC_ENV } from "./_malloc_env.ts";
import { bundleCommand } from "./_permissions.ts";
import { type PushBlob, pushImage } from "./_registry_push.ts";
import { TAR_END, tarArchive, type TarEntry, tarHeader, tarPadding } from "./_tar.ts";
import { buildBundle } from "./bundle.ts";
import { describeVersion, ROOT_DIR } from "./stamp_version.ts";
import { analyseInRoot, layOutRoot } from "./_image_root.ts";
import {
  crossLibraries,
  denoNpmPackage,
  hostArchitecture,
  IMAGE_ARCHITECTURES,
  type ImageArchitecture,
  type PlatformInput,
} from "./_image_platforms.ts";

export { denoNpmPackage, hostArchitecture, type ImageArchitecture, type PlatformInput };

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

/**
 * The source label when neither `--source` nor git's `origin` names the
 * repository (a checkout without a remote): says so rather than guess a URL.
 */
export const DEFAULT_SOURCE = "unknown";

/** Where things are inside the image. */
export const IMAGE_PATHS = {
  deno: "/usr/local/bin/deno",
  bundle: "/usr/local/lib/pods-api/pods-api.js",
  /** Deno's cache (`DENO_DIR`): layer 4; the DaemonSet mounts an `emptyDir` here. */
  denoDir: "/var/cache/pods-api/deno",
} as const;

/** The image's non-root user (distroless's `nonroot` ids). */
export const IMAGE_USER = { name: "pods-api", uid: 65532, gid: 65532 } as const;

/** The size the issue allows the image, uncompressed. */
export const MAX_IMAGE_BYTES = 120 * 1000 * 1000;

const MEDIA = {
  manifest: "application/vnd.oci.image.manifest.v1+json",
  index: "application/vnd.oci.image.index.v1+json",
  config: "application/vnd.oci.image.config.v1+json",
  layerGzip: "application/vnd.oci.image.layer.v1.tar+gzip",
} as const;

const ENCODER = new TextEncoder();
const DECODER = new TextDecoder();

/**
 * The image's entrypoint: Deno running the bundle with the daemon's
 * permissions, the very command the docs give for a systemd install.
 *
 * @returns The entrypoint argv.
 */
export function imageEntrypoint(): string[] {
  return bundleCommand(IMAGE_PATHS.deno, IMAGE_PATHS.bundle);
}

/**
 * The image's environment, as its entrypoint is run with it.
 *
 * @returns Names to values, in the config's order.
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
 * The image's environment as its config's `Env` takes it.
 *
 * @returns `NAME=value` entries.
 */
export function imageEnv(): string[] {
  return Object.entries(imageEnvRecord()).map(([name, value]) => `${name}=${value}`);
}

/**
 * The libraries `ldd` lists for a binary: each path the dynamic loader will
 * open, the loader itself included; the vDSO (no file) left out.
 *
 * @example Usage
 * ```ts
 * import { parseLdd } from "./image.ts";
 * parseLdd("\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x1)\n"); // ["/lib/x86_64-linux-gnu/libc.so.6"]
 * ```
 *
 * @param output `ldd`'s standard output.
 * @returns Absolute paths, in `ldd`'s order; empty for a static binary.
 * @throws {Error} When a library is "not found".
 */
export function parseLdd(output: string): string[] {
  const paths: string[] = [];
  for (const raw of output.split("\n")) {
    const line = raw.trim();
    if (line === "" || /statically linked|not a dynamic executable/.test(line)) continue;
    if (/=>\s*not found/.test(line)) throw new Error(`Missing shared library: ${line}`);
    const arrow = /=>\s*(\/\S+)/.exec(line);
    const bare = /^(\/\S+)\s+\(0x/.exec(line);
    const path = arrow?.[1] ?? bare?.[1];
    if (path !== undefined && !paths.includes(path)) paths.push(path);
  }
  return paths;
}

/**
 * Asks `ldd` which shared libraries a binary needs.
 *
 * @param binary The executable.
 * @returns The libraries' paths.
 * @throws {Error} When `ldd` fails or a library is missing.
 */
export async function sharedLibraries(binary: string): Promise<string[]> {
  const { code, stdout, stderr } = await new Deno.Command("ldd", {
    args: [binary],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = DECODER.decode(stdout) + DECODER.decode(stderr);
  if (code !== 0 && !/not a dynamic executable/.test(text)) {
    throw new Error(`ldd ${binary} failed: ${text.trim()}`);
  }
  return parseLdd(text);
}

async function denoVersionOf(binary: string): Promise<string | undefined> {
  try {
    const { stdout } = await new Deno.Command(binary, {
      args: ["--version"],
      stdout: "piped",
      stderr: "null",
      env: { NO_COLOR: "1" },
    }).output();
    return /^deno (\S+)/.exec(DECODER.decode(stdout))?.[1];
  } catch {
    return undefined;
  }
}

async function packageVersionAt(dir: string): Promise<string | undefined> {
  try {
    const pkg = JSON.parse(await Deno.readTextFile(`${dir}/package.json`));
    return pkg.name === denoNpmPackage() ? pkg.version : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Finds the npm package's Deno binary of `version` for an architecture: for
 * the build machine's, the one running this script when it is that package
 * (`npx -y deno@VERSION`), else one in npm's `npx` cache; else (and for the
 * other architecture) `npm pack` of the package (from npm's cache when
 * offline) unpacked under `workDir`.
 *
 * @param version The Deno version wanted.
 * @param workDir A scratch directory for `npm pack`.
 * @param architecture The architecture. @default {hostArchitecture()}
 * @returns The binary's path.
 * @throws {Error} When none of these has it.
 */
export async function findDenoBinary(
  version: string,
  workDir: string,
  architecture: ImageArchitecture = hostArchitecture(),
): Promise<string> {
  if (architecture === hostArchitecture()) {
    const self = await Deno.realPath(Deno.execPath());
    const selfDir = self.slice(0, self.lastIndexOf("/"));
    if (await packageVersionAt(selfDir) === version) return self;
    const home = Deno.env.get("HOME") ?? "/root";
    try {
      for await (const entry of Deno.readDir(`${home}/.npm/_npx`)) {
        const dir = `${home}/.npm/_npx/${entry.name}/node_modules/${denoNpmPackage()}`;
        if (await packageVersionAt(dir) === version) return `${dir}/deno`;
      }
    } catch {
      // No npx cache: try npm pack.
    }
  }
  workDir = `${workDir}/${architecture}`;
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

async function sha256(data: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", data as BufferSource));
  return `sha256:${Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

async function gzip(data: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([data as BlobPart]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** Parent directories of `path` (relative, outermost first). */
function parents(path: string): string[] {
  const parts = path.replace(/^\//, "").split("/").slice(0, -1);
  return parts.map((_, i) => parts.slice(0, i + 1).join("/"));
}

/** Files at absolute paths, with every parent directory before them. */
function withDirectories(files: { path: string; mode: number; data: Uint8Array }[]): TarEntry[] {
  const dirs = new Set<string>();
  const entries: TarEntry[] = [];
  for (const file of files) {
    for (const dir of parents(file.path)) {
      if (dirs.has(dir)) continue;
      dirs.add(dir);
      entries.push({ type: "dir", path: dir, mode: dir === "tmp" ? 0o1777 : 0o755 });
    }
    entries.push({
      type: "file",
      path: file.path.replace(/^\//, ""),
      mode: file.mode,
      data: file.data,
    });
  }
  return entries;
}

/**
 * Layer 4's entries: the directories above `IMAGE_PATHS.denoDir` (root's),
 * then the cache directory and everything in it, in name order, owned by the
 * image's user (Deno writes next to its databases as it opens them).
 */
async function denoDirEntries(denoDir: string): Promise<TarEntry[]> {
  const owner = { uid: IMAGE_USER.uid, gid: IMAGE_USER.gid };
  const inImage = IMAGE_PATHS.denoDir.replace(/^\//, "");
  const entries: TarEntry[] = parents(`/${inImage}`).map((path) => ({
    type: "dir",
    path,
    mode: 0o755,
  }));
  const walk = async (dir: string, path: string): Promise<void> => {
    entries.push({ type: "dir", path, mode: 0o755, owner });
    const children = [];
    for await (const entry of Deno.readDir(dir)) children.push(entry);
    children.sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
    for (const child of children) {
      if (child.isDirectory) await walk(`${dir}/${child.name}`, `${path}/${child.name}`);
      else if (child.isFile) {
        const data = await Deno.readFile(`${dir}/${child.name}`);
        entries.push({ type: "file", path: `${path}/${child.name}`, mode: 0o644, data, owner });
      }
    }
  };
  await walk(denoDir, inImage);
  return entries;
}

/**
 * Has the image's own entrypoint analyse the bundle once in the build
 * machine's platform's root, laid out as the image holds it (scripts/_image_root.ts).
 *
 * @param platform The build machine's platform (its Deno runs here).
 * @param bundle The bundle to ship.
 * @param root A scratch directory for the root file system.
 * @returns The filled cache directory for {@linkcode BuildImageOptions.denoDir}, or why not.
 */
export async function analyseBundleForImage(
  platform: PlatformInput,
  bundle: string,
  root: string,
): Promise<{ denoDir: string } | { error: string }> {
  const accounts = accountFiles();
  await layOutRoot(root, [
    ...platform.libraries.map((lib) => ({ ...lib, mode: 0o755 })),
    { path: "/etc/passwd", mode: 0o644, data: ENCODER.encode(accounts.passwd) },
    { path: "/etc/group", mode: 0o644, data: ENCODER.encode(accounts.group) },
    { source: platform.deno, path: IMAGE_PATHS.deno, mode: 0o755 },
    { source: bundle, path: IMAGE_PATHS.bundle, mode: 0o644 },
  ]);
  return await analyseInRoot(root, [...imageEntrypoint(), "version"], imageEnvRecord());
}

/** One built layer. */
export interface Layer {
  /** What it holds, for the image's history. */
  readonly comment: string;
  /** Digest of the uncompressed tar (the config's `diff_ids`). */
  readonly diffId: string;
  /** Size of the uncompressed tar. */
  readonly size: number;
  /** The gzip-compressed tar (the blob). */
  readonly blob: Uint8Array;
  readonly digest: string;
}

async function layer(comment: string, entries: TarEntry[]): Promise<Layer> {
  const tar = tarArchive(entries);
  const blob = await gzip(tar);
  return { comment, diffId: await sha256(tar), size: tar.length, blob, digest: await sha256(blob) };
}

/** The base layer's account files. */
export function accountFiles(): { passwd: string; group: string } {
  const { name, uid, gid } = IMAGE_USER;
  return {
    passwd:
      `root:x:0:0:root:/root:/sbin/nologin\n${name}:x:${uid}:${gid}:${name}:/nonexistent:/sbin/nologin\n`,
    group: `root:x:0:\n${name}:x:${gid}:\n`,
  };
}

/**
 * What the build machine's architecture ships: `deno` and its libraries as `ldd` names them.
 *
 * @param deno The Deno binary (or a stand-in).
 * @returns The platform.
 */
export async function hostPlatform(deno: string): Promise<PlatformInput> {
  const libraries = (await sharedLibraries(deno)).map((path) => ({ source: path, path }));
  return { architecture: hostArchitecture(), deno, libraries };
}

/**
 * What another architecture ships: its Deno binary and Debian's cross-libraries it needs.
 *
 * @param deno The Deno binary of that architecture.
 * @param architecture The architecture.
 * @param libraryDir Where its libraries are read (tests). @default {Debian's cross-library directory}
 * @returns The platform.
 */
export async function foreignPlatform(
  deno: string,
  architecture: ImageArchitecture,
  libraryDir?: string,
): Promise<PlatformInput> {
  return { architecture, deno, libraries: await crossLibraries(deno, architecture, libraryDir) };
}

/** Inputs of {@linkcode buildImage}. */
export interface BuildImageOptions {
  /** The image's name (`registry/repository:tag`). */
  name: string;
  /** One image per platform, in the index's order; the build machine's also goes to `docker load`. */
  platforms: readonly PlatformInput[];
  /** The bundle to ship. */
  bundle: string;
  /** The archive to write. */
  output: string;
  /** `org.opencontainers.image.version`. */
  version: string;
  /** `org.opencontainers.image.source`. */
  source: string;
  /** `org.opencontainers.image.revision` (the commit), when known. */
  revision?: string;
  /** The image's creation time (the commit's time: rebuilding gives the same digests). */
  created: Date;
  /**
   * A Deno cache directory that has analysed the bundle at its path in the
   * image ({@linkcode analyseBundleForImage}), shipped at `IMAGE_PATHS.denoDir`
   * as layer 4; none when absent.
   */
  denoDir?: string;
}

/** One platform's image in what {@linkcode buildImage} wrote. */
export interface BuiltPlatform {
  readonly architecture: ImageArchitecture;
  /** Digest of the platform's image manifest. */
  readonly manifestDigest: string;
  readonly configDigest: string;
  /** Sum of the uncompressed layers: the root file system's size. */
  readonly uncompressedBytes: number;
  /** Sum of the compressed layers: what a pull transfers. */
  readonly compressedBytes: number;
  /** The libraries copied in, by their path in the image. */
  readonly libraries: readonly string[];
  /** The manifest's bytes. */
  readonly manifest: Uint8Array;
}

/** What {@linkcode buildImage} wrote. */
export interface BuiltImage {
  readonly name: string;
  readonly output: string;
  /** Digest of the image index (the image's ID in a registry, for every platform). */
  readonly indexDigest: string;
  /** The image index's bytes. */
  readonly index: Uint8Array;
  readonly platforms: readonly BuiltPlatform[];
  /** Every config and layer, for a push. */
  readonly blobs: readonly PushBlob[];
}

/** One platform's layers, config and manifest. */
async function platformImage(
  platform: PlatformInput,
  shared: readonly Layer[],
  options: BuildImageOptions,
): Promise<{ built: BuiltPlatform; layers: Layer[]; config: Uint8Array }> {
  const accounts = accountFiles();
  const base = await layer(
    `shared libraries of deno (${platform.architecture}), /etc/passwd, /etc/group`,
    [
      ...withDirectories([
        ...await Promise.all(platform.libraries.map(async (lib) => ({
          path: lib.path,
          mode: 0o755,
          data: await Deno.readFile(lib.source),
        }))),
        { path: "/etc/passwd", mode: 0o644, data: ENCODER.encode(accounts.passwd) },
        { path: "/etc/group", mode: 0o644, data: ENCODER.encode(accounts.group) },
      ]),
      { type: "dir", path: "tmp", mode: 0o1777 },
    ],
  );
  const runtime = await layer(
    `deno ${PINNED_DENO_VERSION} (${platform.architecture})`,
    withDirectories([{
      path: IMAGE_PATHS.deno,
      mode: 0o755,
      data: await Deno.readFile(platform.deno),
    }]),
  );
  const layers = [base, runtime, ...shared];
  const created = options.created.toISOString().replace(/\.\d+Z$/, "Z");
  const config = ENCODER.encode(JSON.stringify({
    created,
    architecture: platform.architecture,
    os: "linux",
    config: {
      User: `${IMAGE_USER.uid}:${IMAGE_USER.gid}`,
      Env: imageEnv(),
      Entrypoint: imageEntrypoint(),
      Cmd: ["serve"],
      WorkingDir: "/",
      StopSignal: "SIGTERM",
      Labels: imageLabels(options),
    },
    rootfs: { type: "layers", diff_ids: layers.map((l) => l.diffId) },
    history: layers.map((l) => ({ created, created_by: "scripts/image.ts", comment: l.comment })),
  }));
  const configDigest = await sha256(config);
  const manifest = ENCODER.encode(JSON.stringify({
    schemaVersion: 2,
    mediaType: MEDIA.manifest,
    config: { mediaType: MEDIA.config, digest: configDigest, size: config.length },
    layers: layers.map((l) => ({
      mediaType: MEDIA.layerGzip,
      digest: l.digest,
      size: l.blob.length,
    })),
    annotations: versionAnnotations(options),
  }));
  return {
    built: {
      architecture: platform.architecture,
      manifestDigest: await sha256(manifest),
      configDigest,
      uncompressedBytes: layers.reduce((n, l) => n + l.size, 0),
      compressedBytes: layers.reduce((n, l) => n + l.blob.length, 0),
      libraries: platform.libraries.map((l) => l.path),
      manifest,
    },
    layers,
    config,
  };
}

function versionAnnotations(options: BuildImageOptions): Record<string, string> {
  return {
    "org.opencontainers.image.version": options.version,
    "org.opencontainers.image.source": options.source,
  };
}

function imageLabels(options: BuildImageOptions): Record<string, string> {
  return {
    "org.opencontainers.image.title": "pods-api",
    "org.opencontainers.image.description":
      "The Kubelet Pods API on a UNIX socket, from node-local truth",
    ...versionAnnotations(options),
    ...(options.revision ? { "org.opencontainers.image.revision": options.revision } : {}),
  };
}

/**
 * Builds the image, one per platform under one image index, and writes it
 * as an OCI image layout in a tar (with a `manifest.json` of the build
 * machine's platform for `docker load`, which takes one platform).
 *
 * @param options The inputs, name and labels.
 * @returns Name, digests, sizes.
 * @throws {Error} When a library or a file cannot be read.
 */
export async function buildImage(options: BuildImageOptions): Promise<BuiltImage> {
  const app = await layer(
    `pods-api ${options.version}`,
    withDirectories([{
      path: IMAGE_PATHS.bundle,
      mode: 0o644,
      data: await Deno.readFile(options.bundle),
    }]),
  );
  const shared = [app];
  if (options.denoDir !== undefined) {
    shared.push(
      await layer(
        `deno's analysis of the bundle at ${IMAGE_PATHS.bundle}`,
        await denoDirEntries(options.denoDir),
      ),
    );
  }
  const images = [];
  for (const platform of options.platforms) {
    images.push(await platformImage(platform, shared, options));
  }
  const tag = options.name.slice(options.name.lastIndexOf(":") + 1);
  const imageIndex = ENCODER.encode(JSON.stringify({
    schemaVersion: 2,
    mediaType: MEDIA.index,
    manifests: images.map(({ built }) => ({
      mediaType: MEDIA.manifest,
      digest: built.manifestDigest,
      size: built.manifest.length,
      platform: { architecture: built.architecture, os: "linux" },
    })),
    annotations: versionAnnotations(options),
  }));
  const indexDigest = await sha256(imageIndex);
  // The layout's entry point: the multi-platform index, named for ctr and OCI tools.
  const layoutIndex = ENCODER.encode(JSON.stringify({
    schemaVersion: 2,
    mediaType: MEDIA.index,
    manifests: [{
      mediaType: MEDIA.index,
      digest: indexDigest,
      size: imageIndex.length,
      annotations: {
        "io.containerd.image.name": options.name,
        "org.opencontainers.image.ref.name": tag,
      },
    }],
  }));
  const blobPath = (digest: string) => `blobs/sha256/${digest.slice("sha256:".length)}`;
  const host = images.find((i) => i.built.architecture === hostArchitecture()) ?? images[0]!;
  const dockerManifest = ENCODER.encode(JSON.stringify([{
    Config: blobPath(host.built.configDigest),
    RepoTags: [options.name],
    Layers: host.layers.map((l) => blobPath(l.digest)),
  }]));
  const blobs = new Map<string, Uint8Array>();
  for (const { built, layers, config } of images) {
    for (const l of layers) blobs.set(l.digest, l.blob);
    blobs.set(built.configDigest, config);
  }
  const pushBlobs: PushBlob[] = [...blobs].map(([digest, data]) => ({ digest, data }));
  const files: { path: string; data: Uint8Array }[] = [
    { path: "oci-layout", data: ENCODER.encode('{"imageLayoutVersion":"1.0.0"}') },
    { path: "index.json", data: layoutIndex },
    { path: "manifest.json", data: dockerManifest },
    ...[
      ...pushBlobs,
      ...images.map(({ built }) => ({ digest: built.manifestDigest, data: built.manifest })),
      { digest: indexDigest, data: imageIndex },
    ].map((b) => ({ path: blobPath(b.digest), data: b.data })),
  ];
  await writeArchive(options.output, files);
  return {
    name: options.name,
    output: options.output,
    indexDigest,
    index: imageIndex,
    platforms: images.map((i) => i.built),
    blobs: pushBlobs,
  };
}

/** Writes the outer tar file by file (layers are large: no second copy in memory). */
async function writeArchive(output: string, files: { path: string; data: Uint8Array }[]) {
  const temporary = `${output}.tmp-${crypto.randomUUID().slice(0, 8)}`;
  const file = await Deno.open(temporary, { write: true, create: true, truncate: true });
  try {
    const writeAll = async (bytes: Uint8Array) => {
      for (let off = 0; off < bytes.length;) off += await file.write(bytes.subarray(off));
    };
    for (const dir of ["blobs", "blobs/sha256"]) {
      await writeAll(tarHeader({ type: "dir", path: dir, mode: 0o755 }));
    }
    for (const f of files) {
      await writeAll(tarHeader({ type: "file", path: f.path, mode: 0o644, data: f.data }));
      await writeAll(f.data);
      await writeAll(tarPadding(f.data.length));
    }
    await writeAll(TAR_END);
  } finally {
    file.close();
  }
  await Deno.rename(temporary, output);
}

/** The flags of the image script. */
export interface ImageFlags {
  output: string;
  name: string;
  deno: string | undefined;
  bundle: string | undefined;
  source: string | undefined;
  push: string | undefined;
  plainHttp: boolean;
  /** The platforms to build, in the index's order. */
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
    deno: undefined,
    bundle: undefined,
    source: undefined,
    push: undefined,
    plainHttp: false,
    platforms: [...IMAGE_ARCHITECTURES],
  };
  const valued = ["--output", "--name", "--deno", "--bundle", "--source", "--push", "--platforms"];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--plain-http") {
      flags.plainHttp = true;
      continue;
    }
    const eq = arg.indexOf("=");
    const name = eq === -1 ? arg : arg.slice(0, eq);
    if (!valued.includes(name)) {
      throw new TypeError(`Unknown flag "${arg}": use ${valued.join(", ")} or --plain-http`);
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
    const key = name.slice(2) as "output" | "name" | "deno" | "bundle" | "source" | "push";
    flags[key] = value;
  }
  const tagAt = flags.name.lastIndexOf(":");
  if (tagAt <= flags.name.lastIndexOf("/") || !/^[\w][\w.-]*$/.test(flags.name.slice(tagAt + 1))) {
    throw new TypeError(`Flag "--name" must be repository:tag, got "${flags.name}"`);
  }
  return flags;
}

async function git(args: string[]): Promise<string | undefined> {
  try {
    const { success, stdout } = await new Deno.Command("git", {
      args,
      cwd: ROOT_DIR,
      stdout: "piped",
      stderr: "null",
    }).output();
    const text = DECODER.decode(stdout).trim();
    return success && text !== "" ? text : undefined;
  } catch {
    return undefined;
  }
}

function mb(bytes: number): string {
  return `${(bytes / 1e6).toFixed(1)} MB`;
}

async function main(args: readonly string[]): Promise<number> {
  const err = (line: string) => Deno.stderr.writeSync(ENCODER.encode(line + "\n"));
  let flags: ImageFlags;
  try {
    flags = parseImageFlags(args);
  } catch (e) {
    err(`image: ${(e as Error).message}`);
    return 2;
  }
  const root = new URL(".", ROOT_DIR).pathname;
  const work = `${root}dist/.image-work`;
  try {
    await Deno.mkdir(work, { recursive: true });
    const platforms: PlatformInput[] = [];
    for (const architecture of flags.platforms) {
      if (architecture === hostArchitecture()) {
        const deno = flags.deno ?? await findDenoBinary(PINNED_DENO_VERSION, work);
        const shipped = await denoVersionOf(deno);
        if (shipped !== PINNED_DENO_VERSION) {
          err(
            `image: ${deno} is Deno ${
              shipped ?? "(unknown)"
            }, not the pinned ${PINNED_DENO_VERSION}`,
          );
          return 1;
        }
        platforms.push(await hostPlatform(deno));
      } else {
        // npm pack of the pinned version: the package's version is the binary's.
        const deno = await findDenoBinary(PINNED_DENO_VERSION, work, architecture);
        platforms.push(await foreignPlatform(deno, architecture));
      }
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
    const host = platforms.find((p) => p.architecture === hostArchitecture());
    const analysis = host === undefined
      ? { error: `linux/${hostArchitecture()} is not built, and only its Deno runs here` }
      : await analyseBundleForImage(host, bundle, `${work}/root`);
    if ("error" in analysis) {
      err(
        `image: no layer of Deno's analysis (${analysis.error}); ` +
          "the image's first start will parse the bundle",
      );
    }
    const revision = await git(["rev-parse", "HEAD"]);
    const epoch = Number(await git(["log", "-1", "--format=%ct"]) ?? "0");
    const image = await buildImage({
      name: flags.name,
      platforms,
      bundle,
      output: flags.output,
      version,
      source: flags.source ?? await git(["remote", "get-url", "origin"]) ?? DEFAULT_SOURCE,
      ...(revision ? { revision } : {}),
      created: new Date(epoch * 1000),
      ...("denoDir" in analysis ? { denoDir: analysis.denoDir } : {}),
    });
    err(
      `image: wrote ${flags.output}: ${image.name} (pods-api ${version}, deno ${PINNED_DENO_VERSION}), ` +
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
      err(
        `image: linux/${p.architecture}: ${mb(p.uncompressedBytes)} is over the ${
          mb(MAX_IMAGE_BYTES)
        } budget`,
      );
    }
    if (over.length > 0) return 1;
    if (flags.push !== undefined) {
      const pushed = await pushImage(flags.push, {
        blobs: image.blobs,
        platformManifests: image.platforms.map((p) => ({
          digest: p.manifestDigest,
          data: p.manifest,
        })),
        manifest: image.index,
        manifestType: "application/vnd.oci.image.index.v1+json",
        plainHttp: flags.plainHttp,
        username: Deno.env.get("REGISTRY_USER"),
        password: Deno.env.get("REGISTRY_PASSWORD"),
      });
      err(
        `image: pushed ${pushed.reference} (${pushed.digest}, ${pushed.uploaded} blob(s) uploaded)`,
      );
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
