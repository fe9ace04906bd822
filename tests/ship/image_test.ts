/**
 * scripts/image.ts and deploy/Containerfile: the Containerfile says what the
 * code says (entrypoint with the daemon's permissions, environment, user,
 * paths, labels, COPY only); the staged context is what the Containerfile
 * expects; buildah builds it into one manifest list for amd64 and arm64
 * holding only those files, the same digests for the same timestamp, and
 * pushes it to a registry. Built here from small stand-ins for Deno and the
 * bundle; tests/ship/multiarch_image_test.ts and tests/real_cri/image_test.ts
 * build and run the real one.
 *
 * @module
 */

import assert from "node:assert/strict";
import { daemonPermissionFlags } from "../../scripts/_permissions.ts";
import { libraryDir, parseReadelf, stageContext } from "../../scripts/_image_context.ts";
import { PEERS, requirePeer } from "../_support/peers.ts";
import { poll } from "../_support/poll.ts";
import {
  buildahCommands,
  CONTAINERFILE,
  DEFAULT_IMAGE_NAME,
  hostArchitecture,
  IMAGE_PATHS,
  IMAGE_USER,
  type ImageArchitecture,
  imageEntrypoint,
  imageEnvRecord,
  parseImageFlags,
  type PlatformInput,
  platformInput,
  pushCommand,
  readArchive,
} from "../../scripts/image.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const DECODER = new TextDecoder();

/** The Containerfile's instructions: continuation lines joined, comments dropped. */
function instructions(text: string): { op: string; args: string }[] {
  return text.replace(/\\\n/g, " ").split("\n").map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#"))
    .map((l) => {
      const space = l.indexOf(" ");
      return { op: l.slice(0, space).toUpperCase(), args: l.slice(space + 1).trim() };
    });
}

const CONTAINERFILE_TEXT = await Deno.readTextFile(`${ROOT}${CONTAINERFILE}`);
const STEPS = instructions(CONTAINERFILE_TEXT);
const args = (op: string) => STEPS.filter((s) => s.op === op).map((s) => s.args);

async function sh(cmd: string, argv: string[]): Promise<string> {
  const out = await new Deno.Command(cmd, { args: argv, stdout: "piped", stderr: "piped" })
    .output();
  assert.equal(out.code, 0, `${cmd} ${argv.join(" ")}: ${DECODER.decode(out.stderr)}`);
  return DECODER.decode(out.stdout);
}

Deno.test("deploy/Containerfile says what the code and the docs say", async (t) => {
  await t.step("FROM scratch, and COPY only: no stage runs a program", () => {
    assert.deepEqual(STEPS.map((s) => s.op).filter((op) => op === "FROM"), ["FROM"]);
    assert.deepEqual(args("FROM"), ["scratch"]);
    assert.deepEqual(args("RUN"), []);
  });
  await t.step("ENTRYPOINT is Deno with the daemon's permissions, CMD serve", () => {
    assert.deepEqual(args("ENTRYPOINT").map((a) => JSON.parse(a)), [imageEntrypoint()]);
    for (const flag of daemonPermissionFlags()) assert.ok(imageEntrypoint().includes(flag), flag);
    assert.ok(!imageEntrypoint().some((a) => a === "-A" || a === "--allow-all"));
    assert.deepEqual(args("CMD").map((a) => JSON.parse(a)), [["serve"]]);
  });
  await t.step("ENV is the image's environment", () => {
    const env = Object.fromEntries(
      args("ENV").flatMap((a) => a.split(/\s+/)).map((kv) => kv.split("=", 2) as [string, string]),
    );
    assert.deepEqual(env, imageEnvRecord());
  });
  await t.step("USER is the non-root user of deploy/rootfs/etc/passwd and group", async () => {
    assert.deepEqual(args("USER"), [`${IMAGE_USER.uid}:${IMAGE_USER.gid}`]);
    const passwd = await Deno.readTextFile(`${ROOT}deploy/rootfs/etc/passwd`);
    const group = await Deno.readTextFile(`${ROOT}deploy/rootfs/etc/group`);
    const { name, uid, gid } = IMAGE_USER;
    assert.match(passwd, new RegExp(`^${name}:x:${uid}:${gid}:`, "m"));
    assert.match(group, new RegExp(`^${name}:x:${gid}:`, "m"));
  });
  await t.step("COPY puts Deno, the bundle and the analysis at the code's paths", () => {
    const copies = args("COPY");
    assert.ok(copies.includes(`\${TARGETARCH}/deno ${IMAGE_PATHS.deno}`), copies.join("\n"));
    assert.ok(copies.includes(`pods-api.js ${IMAGE_PATHS.bundle}`));
    const { uid, gid } = IMAGE_USER;
    assert.ok(copies.includes(`--chown=${uid}:${gid} deno-dir/ ${IMAGE_PATHS.denoDir}/`));
  });
  await t.step("LABELs: version, revision and source from ARGs with defaults", () => {
    const labels = args("LABEL").join(" ");
    for (const [label, arg] of [["version", "VERSION"], ["revision", "REVISION"]] as const) {
      assert.ok(labels.includes(`org.opencontainers.image.${label}="\${${arg}}"`), label);
    }
    assert.ok(labels.includes('org.opencontainers.image.source="${SOURCE}"'));
    assert.ok(args("ARG").some((a) => /^SOURCE=https:\/\/\S+$/.test(a)), "a source by default");
  });
});

Deno.test("parseReadelf() reads the interpreter and the needed libraries", () => {
  const output = "      [Requesting program interpreter: /lib64/ld-linux-x86-64.so.2]\n" +
    " 0x0000000000000001 (NEEDED)             Shared library: [libdl.so.2]\n" +
    " 0x0000000000000001 (NEEDED)             Shared library: [libc.so.6]\n";
  assert.deepEqual(parseReadelf(output), {
    interpreter: "/lib64/ld-linux-x86-64.so.2",
    needed: ["libdl.so.2", "libc.so.6"],
  });
  assert.deepEqual(parseReadelf("There is no dynamic section in this file.\n"), { needed: [] });
});

Deno.test("parseImageFlags() takes the documented flags", () => {
  assert.equal(parseImageFlags([]).name, DEFAULT_IMAGE_NAME);
  const flags = parseImageFlags([
    "--output=x.tar",
    "--push",
    "reg.example.com:5000/p:1",
    "--plain-http",
    "--context-only",
  ]);
  assert.equal(flags.output, "x.tar");
  assert.equal(flags.push, "reg.example.com:5000/p:1");
  assert.equal(flags.plainHttp, true);
  assert.equal(flags.contextOnly, true);
  assert.deepEqual(flags.platforms, ["amd64", "arm64"], "both platforms by default");
  assert.deepEqual(parseImageFlags(["--platforms", "linux/arm64"]).platforms, ["arm64"]);
  assert.throws(() => parseImageFlags(["--platforms", "riscv64"]), /--platforms/);
  assert.throws(() => parseImageFlags(["--nope"]), /Unknown flag/);
  assert.throws(() => parseImageFlags(["--deno", "x"]), /Unknown flag/);
  assert.throws(() => parseImageFlags(["--name", "no-tag"]), /repository:tag/);
  assert.throws(() => parseImageFlags(["--name", "localhost:5000/pods-api"]), /repository:tag/);
});

Deno.test("pushCommand() pushes every platform, TLS unless local or --plain-http", () => {
  const remote = pushCommand("l", "reg.example.com/team/pods-api:1", { authFile: "/a.json" });
  assert.deepEqual(remote, [
    "manifest",
    "push",
    "--quiet",
    "--all",
    "--authfile=/a.json",
    "l",
    "docker://reg.example.com/team/pods-api:1",
  ]);
  assert.ok(pushCommand("l", "localhost:5000/p:1").includes("--tls-verify=false"));
  assert.ok(pushCommand("l", "127.0.0.1/p:1").includes("--tls-verify=false"));
  assert.ok(pushCommand("l", "r.example/p:1", { plainHttp: true }).includes("--tls-verify=false"));
});

const BUILD_PEER = requirePeer(
  PEERS.buildah,
  PEERS.root,
  PEERS.readelf,
  PEERS.arm64Libraries,
  PEERS.dockerRegistry,
);

/** Stand-ins: a small dynamic binary for each architecture's Deno. */
function standIn(architecture: ImageArchitecture): string {
  return architecture === hostArchitecture()
    ? "/usr/bin/env"
    : `${libraryDir(architecture)}/libc.so.6`;
}

Deno.test({
  name: BUILD_PEER.name(
    "buildah builds deploy/Containerfile for amd64 and arm64, only the staged files, reproducibly",
  ),
  ignore: BUILD_PEER.ignore,
  sanitizeResources: false,
  async fn(t) {
    BUILD_PEER.check();
    const dir = await Deno.makeTempDir({ prefix: "pods-api-image-" });
    const name = "localhost/pods-api-test:9.9.9";
    let registry: Deno.ChildProcess | undefined;
    try {
      const platforms: PlatformInput[] = [];
      for (const arch of ["amd64", "arm64"] as const) {
        platforms.push(await platformInput(standIn(arch), arch));
      }
      await Deno.writeTextFile(`${dir}/pods-api.js`, 'var BUILD_VERSION = "9.9.9";\n');
      const context = `${dir}/context`;
      await stageContext(context, platforms, `${dir}/pods-api.js`);
      await Deno.writeTextFile(`${context}/deno-dir/dep_analysis_cache_v2`, "analysis");
      const build = async (tag: string, timestamp: number) => {
        const storage = [
          "--storage-driver=vfs",
          `--root=${dir}/${tag}/storage`,
          `--runroot=${dir}/${tag}/run`,
        ];
        const output = `${dir}/${tag}.tar`;
        for (
          const command of buildahCommands({
            name,
            context,
            output,
            platforms: ["amd64", "arm64"],
            timestamp,
            buildArgs: { VERSION: "9.9.9", REVISION: "0123abc" },
          })
        ) await sh("buildah", [...storage, ...command]);
        return { storage, output, ...await readArchive(output, `${dir}/${tag}-read`) };
      };
      const image = await build("a", 1_700_000_000);
      const layout = `${dir}/a-read`;
      const json = async (digest: string) =>
        JSON.parse(await Deno.readTextFile(`${layout}/blobs/sha256/${digest.slice(7)}`));
      const index = await json(image.indexDigest);

      await t.step("one manifest list: amd64, then arm64", () => {
        assert.deepEqual(
          index.manifests.map((m: { platform: { architecture: string } }) => m.platform),
          [{ architecture: "amd64", os: "linux" }, { architecture: "arm64", os: "linux" }],
        );
      });

      for (const [i, arch] of (["amd64", "arm64"] as const).entries()) {
        await t.step(`${arch}: config, and a root holding only the staged files`, async () => {
          const manifest = await json(index.manifests[i].digest);
          const config = await json(manifest.config.digest);
          assert.equal(config.architecture, arch);
          assert.equal(config.created, "2023-11-14T22:13:20Z");
          assert.equal(config.config.User, `${IMAGE_USER.uid}:${IMAGE_USER.gid}`);
          assert.deepEqual(config.config.Entrypoint, imageEntrypoint());
          assert.deepEqual(config.config.Cmd, ["serve"]);
          assert.deepEqual(
            config.config.Env,
            Object.entries(imageEnvRecord()).map(([k, v]) => `${k}=${v}`),
          );
          const labels = config.config.Labels;
          assert.equal(labels["org.opencontainers.image.version"], "9.9.9");
          assert.equal(labels["org.opencontainers.image.revision"], "0123abc");
          assert.match(labels["org.opencontainers.image.source"], /^https:\/\//);
          const listing: { mode: string; owner: string; path: string }[] = [];
          for (const layer of manifest.layers) {
            const path = `${layout}/blobs/sha256/${layer.digest.slice(7)}`;
            listing.push(
              ...(await sh("tar", ["--numeric-owner", "-tvzf", path])).trim().split("\n")
                .map((l) => l.split(/\s+/)).map(([mode, owner, , , , path]) => ({
                  mode: mode!,
                  owner: owner!,
                  path: path!.replace(/\/$/, ""),
                })),
            );
          }
          const files = listing.filter((e) => !e.mode.startsWith("d")).map((e) => `/${e.path}`);
          assert.deepEqual(
            files.sort(),
            [
              "/etc/passwd",
              "/etc/group",
              IMAGE_PATHS.deno,
              IMAGE_PATHS.bundle,
              `${IMAGE_PATHS.denoDir}/dep_analysis_cache_v2`,
              ...platforms[i]!.libraries.map((l) => l.path),
            ].sort(),
          );
          const owner = (path: string) => listing.find((e) => e.path === path.slice(1))?.owner;
          const user = `${IMAGE_USER.uid}/${IMAGE_USER.gid}`;
          assert.equal(owner(IMAGE_PATHS.denoDir), user);
          assert.equal(owner(`${IMAGE_PATHS.denoDir}/dep_analysis_cache_v2`), user);
          assert.equal(owner("/var/cache"), "0/0");
          assert.equal(listing.find((e) => e.path === "tmp")?.mode, "drwxrwxrwt");
        });
      }

      await t.step("the same context and timestamp build the same digests", async () => {
        const again = await build("b", 1_700_000_000);
        assert.deepEqual(again.platforms, image.platforms);
        assert.equal(again.indexDigest, image.indexDigest);
        // Control: another timestamp is another image.
        const later = await build("c", 1_700_000_001);
        assert.notEqual(later.indexDigest, image.indexDigest);
      });

      await t.step("--push puts the same manifest list in a registry", async () => {
        const port = (() => {
          const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
          l.close();
          return l.addr.port;
        })();
        await Deno.writeTextFile(
          `${dir}/registry.yml`,
          `version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: ${dir}/registry\nhttp:\n  addr: 127.0.0.1:${port}\n`,
        );
        registry = new Deno.Command("/usr/bin/docker-registry", {
          args: ["serve", `${dir}/registry.yml`],
          stdout: "null",
          stderr: "null",
        }).spawn();
        const base = `http://127.0.0.1:${port}/v2/`;
        await poll(() =>
          fetch(base).then(async (r) => {
            await r.body?.cancel();
            return r.ok ? true : undefined;
          }, () => undefined), {
          what: "the registry",
          timeoutMs: 30_000,
          intervalMs: 100,
        });
        await sh("buildah", [
          ...image.storage,
          ...pushCommand(name, `127.0.0.1:${port}/team/pods-api:9.9.9`),
        ]);
        const got = await fetch(`${base}team/pods-api/manifests/9.9.9`, {
          headers: { accept: "application/vnd.oci.image.index.v1+json" },
        });
        await got.body?.cancel();
        assert.equal(got.status, 200);
        assert.equal(got.headers.get("docker-content-digest"), image.indexDigest);
        for (const p of image.platforms) {
          const m = await fetch(`${base}team/pods-api/manifests/${p.manifestDigest}`, {
            method: "HEAD",
            headers: { accept: "application/vnd.oci.image.manifest.v1+json" },
          });
          assert.equal(m.status, 200, p.architecture);
        }
      });
    } finally {
      if (registry !== undefined) {
        registry.kill("SIGTERM");
        await registry.status;
      }
      await Deno.remove(dir, { recursive: true });
    }
  },
});
