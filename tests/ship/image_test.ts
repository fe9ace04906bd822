/**
 * scripts/image.ts: the OCI archive it writes is a valid image layout (every
 * blob named by its digest, diff_ids of the uncompressed layers), holds only
 * what it should (the binary's `ldd` libraries, the account files, Deno, the
 * bundle), carries the daemon's permissions in its entrypoint, is
 * reproducible, and can be pushed to a registry. Built here from a small
 * binary and a stub bundle; tests/real_cri/image_test.ts builds and runs the
 * real one.
 *
 * @module
 */

import { mallocEnvEntries } from "../../scripts/_malloc_env.ts";
import assert from "node:assert/strict";
import { daemonPermissionFlags } from "../../scripts/_permissions.ts";
import { parseReference, pushImage } from "../../scripts/_registry_push.ts";
import { tarArchive } from "../../scripts/_tar.ts";
import { PEERS, requirePeer } from "../_support/peers.ts";
import {
  accountFiles,
  buildImage,
  type BuildImageOptions,
  DEFAULT_IMAGE_NAME,
  foreignPlatform,
  hostArchitecture,
  hostPlatform,
  IMAGE_PATHS,
  IMAGE_USER,
  imageEntrypoint,
  parseImageFlags,
  parseLdd,
  sharedLibraries,
} from "../../scripts/image.ts";

const DECODER = new TextDecoder();
/** A small dynamically linked binary stands in for Deno. */
const BINARY = "/usr/bin/env";

async function sh(cmd: string, args: string[], cwd?: string): Promise<string> {
  const out = await new Deno.Command(cmd, { args, cwd, stdout: "piped", stderr: "piped" })
    .output();
  assert.equal(out.code, 0, DECODER.decode(out.stderr));
  return DECODER.decode(out.stdout);
}

async function sha256File(path: string): Promise<string> {
  return `sha256:${(await sh("sha256sum", [path])).split(" ")[0]}`;
}

async function build(dir: string, overrides: Partial<BuildImageOptions> = {}) {
  await Deno.writeTextFile(`${dir}/pods-api.js`, 'var BUILD_VERSION = "9.9.9";\n');
  return await buildImage({
    name: "localhost/pods-api:9.9.9",
    platforms: [await hostPlatform(BINARY)],
    bundle: `${dir}/pods-api.js`,
    output: `${dir}/image.tar`,
    version: "9.9.9",
    source: "https://example.com/pods-api",
    revision: "0123456789abcdef",
    created: new Date(1_700_000_000_000),
    ...overrides,
  });
}

Deno.test("parseLdd() lists the files the loader opens", async (t) => {
  const cases = [
    {
      name: "libraries and the loader, no vDSO",
      output: "\tlinux-vdso.so.1 (0x00007ffd)\n" +
        "\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n" +
        "\t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n",
      want: ["/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"],
    },
    { name: "a static binary", output: "\tstatically linked\n", want: [] },
    { name: "not dynamic", output: "\tnot a dynamic executable\n", want: [] },
  ];
  for (const c of cases) await t.step(c.name, () => assert.deepEqual(parseLdd(c.output), c.want));
  await t.step("a missing library is an error", () => {
    assert.throws(() => parseLdd("\tlibfoo.so.1 => not found\n"), /libfoo/);
  });
});

Deno.test("tarArchive() writes what GNU tar reads back", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const long = `${"d".repeat(90)}/${"e".repeat(60)}/file`;
    await Deno.writeFile(
      `${dir}/t.tar`,
      tarArchive([
        { type: "dir", path: "tmp", mode: 0o1777 },
        { type: "file", path: "a/b.txt", mode: 0o644, data: new TextEncoder().encode("hi\n") },
        { type: "symlink", path: "a/link", target: "b.txt" },
        { type: "file", path: long, mode: 0o755, data: new Uint8Array(513) },
      ]),
    );
    const listing = (await sh("tar", ["--numeric-owner", "-tvf", `${dir}/t.tar`])).trim()
      .split("\n").map((l) => l.replace(/\s+\d{4}-\d\d-\d\d \d\d:\d\d/, "").split(/\s+/));
    assert.deepEqual(listing, [
      ["drwxrwxrwt", "0/0", "0", "tmp/"],
      ["-rw-r--r--", "0/0", "3", "a/b.txt"],
      ["lrwxrwxrwx", "0/0", "0", "a/link", "->", "b.txt"],
      ["-rwxr-xr-x", "0/0", "513", long],
    ]);
    await sh("tar", ["-xf", `${dir}/t.tar`, "a/b.txt"], dir);
    assert.equal(await Deno.readTextFile(`${dir}/a/b.txt`), "hi\n");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("buildImage() writes a valid OCI image layout holding only what it needs", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "pods-api-image-" });
  try {
    const image = await build(dir);
    const out = `${dir}/out`;
    await Deno.mkdir(out);
    await sh("tar", ["-xf", `${dir}/image.tar`], out);
    const blob = (digest: string) => `${out}/blobs/sha256/${digest.slice(7)}`;
    const json = async (path: string) => JSON.parse(await Deno.readTextFile(path));

    const index = await json(`${out}/index.json`);
    const [entry] = index.manifests;
    const imageIndex = await json(blob(entry.digest));
    const [platformEntry] = imageIndex.manifests;
    const manifest = await json(blob(platformEntry.digest));
    const config = await json(blob(manifest.config.digest));

    await t.step("layout, index and docker manifest name the image", async () => {
      assert.deepEqual(await json(`${out}/oci-layout`), { imageLayoutVersion: "1.0.0" });
      assert.equal(entry.mediaType, "application/vnd.oci.image.index.v1+json");
      assert.equal(entry.digest, image.indexDigest);
      assert.equal(platformEntry.digest, image.platforms[0]!.manifestDigest);
      assert.deepEqual(platformEntry.platform, { architecture: hostArchitecture(), os: "linux" });
      assert.equal(entry.annotations["io.containerd.image.name"], "localhost/pods-api:9.9.9");
      assert.equal(entry.annotations["org.opencontainers.image.ref.name"], "9.9.9");
      const [docker] = await json(`${out}/manifest.json`);
      assert.deepEqual(docker.RepoTags, ["localhost/pods-api:9.9.9"]);
    });

    await t.step("every blob is named by its digest, sizes match", async () => {
      for await (const e of Deno.readDir(`${out}/blobs/sha256`)) {
        assert.equal(await sha256File(`${out}/blobs/sha256/${e.name}`), `sha256:${e.name}`);
      }
      for (const d of [manifest.config, ...manifest.layers]) {
        assert.equal((await Deno.stat(blob(d.digest))).size, d.size);
      }
    });

    const layerFiles: string[][] = [];
    await t.step("diff_ids are the digests of the uncompressed layers", async () => {
      assert.equal(config.rootfs.diff_ids.length, 3);
      for (const [i, layer] of manifest.layers.entries()) {
        assert.equal(layer.mediaType, "application/vnd.oci.image.layer.v1.tar+gzip");
        await sh("sh", ["-c", `gzip -dc '${blob(layer.digest)}' > '${dir}/layer${i}.tar'`]);
        assert.equal(await sha256File(`${dir}/layer${i}.tar`), config.rootfs.diff_ids[i]);
        layerFiles.push(
          (await sh("tar", ["-tf", `${dir}/layer${i}.tar`])).trim().split("\n")
            .filter((p) => !p.endsWith("/")),
        );
      }
    });

    await t.step("layers: the binary's libraries and accounts; Deno; the bundle", async () => {
      const libs = await sharedLibraries(BINARY);
      assert.ok(libs.length > 0);
      assert.deepEqual(
        layerFiles[0]!.sort(),
        [...libs.map((p) => p.slice(1)), "etc/passwd", "etc/group"].sort(),
      );
      assert.deepEqual(layerFiles[1], [IMAGE_PATHS.deno.slice(1)]);
      assert.deepEqual(layerFiles[2], [IMAGE_PATHS.bundle.slice(1)]);
      const accounts = accountFiles();
      assert.match(accounts.passwd, new RegExp(`^${IMAGE_USER.name}:x:${IMAGE_USER.uid}:`, "m"));
      assert.match(accounts.group, new RegExp(`^${IMAGE_USER.name}:x:${IMAGE_USER.gid}:`, "m"));
    });

    await t.step("config: non-root user, entrypoint with the daemon's permissions, labels", () => {
      assert.equal(config.os, "linux");
      assert.equal(config.created, "2023-11-14T22:13:20Z");
      assert.equal(config.config.User, `${IMAGE_USER.uid}:${IMAGE_USER.gid}`);
      assert.deepEqual(config.config.Entrypoint, imageEntrypoint());
      assert.deepEqual(config.config.Cmd, ["serve"]);
      for (const entry of mallocEnvEntries()) assert.ok(config.config.Env.includes(entry), entry);
      assert.ok(config.config.Env.includes(`DENO_DIR=${IMAGE_PATHS.denoDir}`));
      const entrypoint: string[] = config.config.Entrypoint;
      assert.equal(entrypoint[0], IMAGE_PATHS.deno);
      assert.equal(entrypoint.at(-1), IMAGE_PATHS.bundle);
      for (const flag of daemonPermissionFlags()) assert.ok(entrypoint.includes(flag), flag);
      assert.ok(!entrypoint.some((a) => a === "-A" || a === "--allow-all"));
      assert.deepEqual(config.config.Labels["org.opencontainers.image.version"], "9.9.9");
      assert.deepEqual(
        config.config.Labels["org.opencontainers.image.source"],
        "https://example.com/pods-api",
      );
      assert.equal(config.config.Labels["org.opencontainers.image.revision"], "0123456789abcdef");
    });

    await t.step("sizes are the layers' sums", () => {
      const built = image.platforms[0]!;
      assert.equal(
        built.compressedBytes,
        manifest.layers.reduce((n: number, l: { size: number }) => n + l.size, 0),
      );
      assert.ok(built.uncompressedBytes > built.compressedBytes);
    });

    await t.step("the same inputs give the same digests", async () => {
      const again = await build(dir, { output: `${dir}/again.tar` });
      assert.equal(again.indexDigest, image.indexDigest);
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("buildImage() ships a Deno cache as layer 4, owned by the image's user", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pods-api-image-" });
  try {
    const cache = `${dir}/deno-dir`;
    await Deno.mkdir(`${cache}/npm`, { recursive: true });
    await Deno.writeTextFile(`${cache}/dep_analysis_cache_v2`, "analysis");
    await Deno.writeTextFile(`${cache}/b_cache`, "b");
    const without = await build(dir, { output: `${dir}/without.tar` });
    const image = await build(dir, { denoDir: cache });
    const out = `${dir}/out`;
    await Deno.mkdir(out);
    await sh("tar", ["-xf", `${dir}/image.tar`], out);
    const json = async (digest: string) =>
      JSON.parse(await Deno.readTextFile(`${out}/blobs/sha256/${digest.slice(7)}`));
    const manifest = await json(image.platforms[0]!.manifestDigest);
    assert.equal(manifest.layers.length, 4);
    const last = `${out}/blobs/sha256/${manifest.layers[3].digest.slice(7)}`;
    const listing = (await sh("tar", ["--numeric-owner", "-tvzf", last])).trim().split("\n")
      .map((l) => {
        const [mode, owner, , , , path] = l.split(/\s+/);
        return [mode, owner, path];
      });
    const own = `${IMAGE_USER.uid}/${IMAGE_USER.gid}`;
    const inImage = IMAGE_PATHS.denoDir.slice(1);
    assert.deepEqual(listing, [
      ["drwxr-xr-x", "0/0", "var/"],
      ["drwxr-xr-x", "0/0", "var/cache/"],
      ["drwxr-xr-x", "0/0", "var/cache/pods-api/"],
      ["drwxr-xr-x", own, `${inImage}/`],
      ["-rw-r--r--", own, `${inImage}/b_cache`],
      ["-rw-r--r--", own, `${inImage}/dep_analysis_cache_v2`],
      ["drwxr-xr-x", own, `${inImage}/npm/`],
    ]);
    assert.equal(
      await sh("tar", ["-xzOf", last, `${inImage}/dep_analysis_cache_v2`]),
      "analysis",
    );
    assert.notEqual(image.indexDigest, without.indexDigest);
    const again = await build(dir, { denoDir: cache, output: `${dir}/again.tar` });
    assert.equal(again.indexDigest, image.indexDigest);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("parseImageFlags() takes the documented flags", () => {
  assert.equal(parseImageFlags([]).name, DEFAULT_IMAGE_NAME);
  const flags = parseImageFlags([
    "--output=x.tar",
    "--push",
    "reg.example.com:5000/p:1",
    "--plain-http",
  ]);
  assert.equal(flags.output, "x.tar");
  assert.equal(flags.push, "reg.example.com:5000/p:1");
  assert.equal(flags.plainHttp, true);
  assert.deepEqual(flags.platforms, ["amd64", "arm64"], "both platforms by default");
  assert.deepEqual(parseImageFlags(["--platforms", "linux/arm64"]).platforms, ["arm64"]);
  assert.throws(() => parseImageFlags(["--platforms", "riscv64"]), /--platforms/);
  assert.throws(() => parseImageFlags(["--nope"]), /Unknown flag/);
  assert.throws(() => parseImageFlags(["--name", "no-tag"]), /repository:tag/);
  assert.throws(() => parseImageFlags(["--name", "localhost:5000/pods-api"]), /repository:tag/);
  assert.equal(
    parseImageFlags(["--name=localhost:5000/pods-api:1"]).name,
    "localhost:5000/pods-api:1",
  );
});

Deno.test("parseReference() needs a registry host", () => {
  assert.deepEqual(parseReference("localhost:5000/pods-api:0.1.0"), {
    host: "localhost:5000",
    repository: "pods-api",
    tag: "0.1.0",
  });
  assert.deepEqual(parseReference("reg.example.com/team/pods-api"), {
    host: "reg.example.com",
    repository: "team/pods-api",
    tag: "latest",
  });
  assert.throws(() => parseReference("pods-api:0.1.0"), /name the registry/);
});

Deno.test("pushImage() uploads missing blobs, then the manifest, with Basic auth", async () => {
  const blobs = new Map<string, Uint8Array>();
  const manifests = new Map<string, { type: string; body: Uint8Array }>();
  const log: string[] = [];
  const existing = "sha256:" + "0".repeat(64);
  blobs.set(existing, new Uint8Array());
  const auth = `Basic ${btoa("me:secret")}`;
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (req) => {
      const url = new URL(req.url);
      log.push(`${req.method} ${url.pathname}`);
      if (req.headers.get("authorization") !== auth) {
        return new Response("", {
          status: 401,
          headers: { "www-authenticate": 'Basic realm="r"' },
        });
      }
      if (url.pathname === "/v2/") return new Response("{}");
      const blob = /^\/v2\/(.+)\/blobs\/(sha256:[0-9a-f]{64})$/.exec(url.pathname);
      if (req.method === "HEAD" && blob) {
        return new Response(null, {
          status: blobs.has(blob[2]!) ? 200 : 404,
        });
      }
      if (req.method === "POST" && url.pathname === "/v2/team/pods-api/blobs/uploads/") {
        return new Response(null, { status: 202, headers: { location: "/upload/1?state=x" } });
      }
      if (req.method === "PUT" && url.pathname === "/upload/1") {
        const digest = url.searchParams.get("digest")!;
        blobs.set(digest, new Uint8Array(await req.arrayBuffer()));
        return new Response(null, { status: 201 });
      }
      const manifest = /^\/v2\/team\/pods-api\/manifests\/(.+)$/.exec(url.pathname);
      if (req.method === "PUT" && manifest) {
        manifests.set(manifest[1]!, {
          type: req.headers.get("content-type") ?? "",
          body: new Uint8Array(await req.arrayBuffer()),
        });
        return new Response(null, {
          status: 201,
          headers: { "docker-content-digest": "sha256:m" },
        });
      }
      return new Response("", { status: 404 });
    },
  );
  const data = new TextEncoder().encode("layer");
  const digest = `sha256:${
    Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", data)), (b) =>
      b.toString(16).padStart(2, "0")).join("")
  }`;
  const manifest = new TextEncoder().encode('{"schemaVersion":2}');
  const result = await pushImage(`127.0.0.1:${server.addr.port}/team/pods-api:0.1.0`, {
    blobs: [{ digest: existing, data: new Uint8Array() }, { digest, data }],
    manifest,
    username: "me",
    password: "secret",
  });
  assert.deepEqual(result, {
    reference: `127.0.0.1:${server.addr.port}/team/pods-api:0.1.0`,
    digest: "sha256:m",
    uploaded: 1,
  });
  assert.deepEqual(blobs.get(digest), data);
  assert.deepEqual(manifests.get("0.1.0")?.body, manifest);
  assert.equal(manifests.get("0.1.0")?.type, "application/vnd.oci.image.manifest.v1+json");
  assert.equal(log[0], "GET /v2/");
});

Deno.test("pushImage() says the registry is unreachable", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr;
  listener.close();
  await assert.rejects(
    pushImage(`127.0.0.1:${port}/pods-api:0.1.0`, { blobs: [], manifest: new Uint8Array() }),
    /Registry 127\.0\.0\.1:\d+ is unreachable/,
  );
});

const CROSS = "/usr/aarch64-linux-gnu/lib";
const ARM64_PEER = requirePeer(PEERS.arm64Libraries, PEERS.readelf);

Deno.test({
  name: ARM64_PEER.name(
    "buildImage() writes one index for amd64 and arm64, sharing the bundle's layer",
  ),
  ignore: ARM64_PEER.ignore,
  async fn() {
    ARM64_PEER.check();
    const dir = await Deno.makeTempDir({ prefix: "pods-api-image-" });
    try {
      // Debian's arm64 libc stands in for an arm64 Deno: an ELF with an interpreter and NEEDED.
      const arm = await foreignPlatform(`${CROSS}/libc.so.6`, "arm64");
      assert.deepEqual(arm.libraries.map((l) => l.path), ["/lib/ld-linux-aarch64.so.1"]);
      await Deno.writeTextFile(`${dir}/pods-api.js`, 'var BUILD_VERSION = "9.9.9";\n');
      const image = await buildImage({
        name: "localhost/pods-api:9.9.9",
        platforms: [await hostPlatform(BINARY), arm],
        bundle: `${dir}/pods-api.js`,
        output: `${dir}/image.tar`,
        version: "9.9.9",
        source: "https://example.com/pods-api",
        created: new Date(1_700_000_000_000),
      });
      const out = `${dir}/out`;
      await Deno.mkdir(out);
      await sh("tar", ["-xf", `${dir}/image.tar`], out);
      const json = async (digest: string) =>
        JSON.parse(await Deno.readTextFile(`${out}/blobs/sha256/${digest.slice(7)}`));
      const index = await json(image.indexDigest);
      assert.deepEqual(
        index.manifests.map((m: { platform: unknown }) => m.platform),
        [{ architecture: hostArchitecture(), os: "linux" }, { architecture: "arm64", os: "linux" }],
      );
      const manifests = await Promise.all(
        index.manifests.map((m: { digest: string }) => json(m.digest)),
      );
      const configs = await Promise.all(manifests.map((m) => json(m.config.digest)));
      assert.deepEqual(configs.map((c) => c.architecture), [hostArchitecture(), "arm64"]);
      assert.deepEqual(configs[0].config.Entrypoint, configs[1].config.Entrypoint);
      assert.equal(manifests[0].layers[2].digest, manifests[1].layers[2].digest, "one bundle blob");
      assert.notEqual(manifests[0].layers[0].digest, manifests[1].layers[0].digest);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
