// `deno task image` (buildah, deploy/Containerfile) writes one manifest list
// for linux/amd64 and linux/arm64, and a second build of the same commit
// writes the same digests. Each image's root holds Deno, its libraries, the
// account files, the bundle and Deno's analysis of it: no shell, no package
// manager. The amd64 image's entrypoint, run in its root as a first start,
// finds the bundle analysed and writes nothing to DENO_DIR; the arm64 image's
// entrypoint runs under Debian's qemu-user-static (in a chroot of its root):
// it prints the version, and a short `serve --simulate` answers the image's
// own `list`. (The amd64 image runs on a real containerd:
// tests/real_cri/image_test.ts.)
import assert from "node:assert/strict";
import { poll } from "../_support/poll.ts";
import { PEERS, requirePeer } from "../_support/peers.ts";
import { runInRoot } from "../../scripts/_image_root.ts";
import { IMAGE_PATHS, imageEnvRecord } from "../../scripts/image.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const QEMU = "/usr/bin/qemu-aarch64-static";
const DECODER = new TextDecoder();

// Building the index needs the arm64 libraries (found with readelf) and npm
// (to pack the arm64 Deno); running its entrypoint needs qemu in a chroot.
const PEER = requirePeer(
  PEERS.buildah,
  PEERS.qemuAarch64,
  PEERS.root,
  PEERS.arm64Libraries,
  PEERS.readelf,
  PEERS.npm,
);

async function sh(cmd: string, args: string[], cwd?: string): Promise<string> {
  const r = await new Deno.Command(cmd, { args, cwd, stdout: "piped", stderr: "piped" }).output();
  assert.equal(r.code, 0, `${cmd} ${args.join(" ")}: ${DECODER.decode(r.stderr)}`);
  return DECODER.decode(r.stdout);
}

interface Descriptor {
  digest: string;
  platform?: { architecture: string; os: string };
}

/** The files of a root (directories left out), relative to it. */
async function files(root: string): Promise<string[]> {
  const out = await sh("find", [root, "-not", "-type", "d", "-printf", "/%P\\n"]);
  return out.trim().split("\n").sort();
}

/** Bytes in a database's write-ahead log: what a run of Deno wrote to it. */
async function walBytes(path: string): Promise<number> {
  return await Deno.stat(`${path}-wal`).then((s) => s.size, () => 0);
}

Deno.test({
  name: PEER.name(
    "deno task image: reproducible, no shell, amd64 analysed, arm64 runs under qemu",
  ),
  ignore: PEER.ignore,
  async fn(t) {
    PEER.check();
    const dir = await Deno.makeTempDir({ prefix: "pods-api-multiarch-" });
    const tag = crypto.randomUUID().slice(0, 8);
    const archives = [`dist/multiarch-test-${tag}-1.tar`, `dist/multiarch-test-${tag}-2.tar`];
    let daemon: Deno.ChildProcess | undefined;
    try {
      const logs: string[] = [];
      for (const archive of archives) {
        const built = await new Deno.Command(Deno.execPath(), {
          args: ["task", "--quiet", "image", "--output", archive],
          cwd: ROOT,
          stdout: "piped",
          stderr: "piped",
        }).output();
        const log = DECODER.decode(built.stderr);
        assert.equal(built.code, 0, log);
        logs.push(log);
      }
      const log = logs[0]!;
      const digests = (text: string) => [...text.matchAll(/(index|manifest) (sha256:\w+)/g)];
      await t.step("a second build of the commit gives the same digests", () => {
        assert.equal(digests(log).length, 3, log);
        assert.deepEqual(
          digests(logs[1]!).map((m) => m[2]),
          digests(log).map((m) => m[2]),
        );
      });
      const version = /\(pods-api (\S+), deno/.exec(log)?.[1];
      assert.ok(version, log);

      const out = `${dir}/layout`;
      await Deno.mkdir(out);
      await sh("tar", ["-xf", `${ROOT}${archives[0]}`, "-C", out]);
      const blob = (d: string) => `${out}/blobs/sha256/${d.slice("sha256:".length)}`;
      const json = async (d: string) => JSON.parse(await Deno.readTextFile(blob(d)));
      const layout = JSON.parse(await Deno.readTextFile(`${out}/index.json`));
      const index = await json(layout.manifests[0].digest);
      const platforms = (index.manifests as Descriptor[]).map((m) =>
        `${m.platform?.os}/${m.platform?.architecture}`
      );
      assert.deepEqual(platforms, ["linux/amd64", "linux/arm64"]);
      const unpack = async (architecture: string) => {
        const entry = (index.manifests as Descriptor[]).find((m) =>
          m.platform?.architecture === architecture
        )!;
        const manifest = await json(entry.digest);
        const config = await json(manifest.config.digest);
        assert.equal(config.architecture, architecture);
        const rootfs = `${dir}/rootfs-${architecture}`;
        await Deno.mkdir(rootfs);
        for (const layer of manifest.layers) {
          await sh("tar", ["-xzf", blob(layer.digest), "-C", rootfs]);
        }
        return { rootfs, config };
      };
      const amd = await unpack("amd64");
      const arm = await unpack("arm64");

      await t.step(
        "each root: Deno, its libraries, accounts, bundle, analysis; no shell",
        async () => {
          for (const { rootfs } of [amd, arm]) {
            const all = await files(rootfs);
            const analysis = all.filter((f) => f.startsWith(`${IMAGE_PATHS.denoDir}/`));
            const libraries = all.filter((f) => /^\/lib(64)?\/[^/]+(\/[^/]+)?$/.test(f));
            assert.ok(analysis.includes(`${IMAGE_PATHS.denoDir}/dep_analysis_cache_v2`));
            assert.ok(libraries.some((f) => f.endsWith("/libc.so.6")), all.join(" "));
            assert.deepEqual(
              all,
              ["/etc/group", "/etc/passwd", IMAGE_PATHS.bundle, IMAGE_PATHS.deno]
                .concat(analysis, libraries).sort(),
            );
            for (const f of libraries) assert.match(f, /\.so(\.\d+)*$/, "a library, not a program");
            const links = await sh("find", [rootfs, "-type", "l"]);
            assert.equal(links, "", "no other name for a program");
          }
        },
      );

      await t.step("amd64: a first start finds the bundle analysed, writes nothing", async () => {
        const db = `${amd.rootfs}${IMAGE_PATHS.denoDir}/dep_analysis_cache_v2`;
        await Deno.mkdir(`${amd.rootfs}/proc`);
        const entrypoint = [...amd.config.config.Entrypoint, "version"];
        const first = await runInRoot(amd.rootfs, entrypoint, imageEnvRecord());
        assert.equal(first.output, `pods-api ${version}\n`);
        assert.equal(await walBytes(db), 0);
        // Control: the same start with an empty DENO_DIR writes an analysis.
        const empty = "/tmp/empty-deno-dir";
        const cold = await runInRoot(amd.rootfs, entrypoint, {
          ...imageEnvRecord(),
          DENO_DIR: empty,
        });
        assert.equal(cold.code, 0, cold.output);
        const written = `${amd.rootfs}${empty}/dep_analysis_cache_v2`;
        assert.ok((await Deno.stat(written)).size + await walBytes(written) > 0);
      });

      const rootfs = arm.rootfs;
      const config = arm.config;
      // ELF e_machine 183: AArch64.
      const elf = (await Deno.readFile(`${rootfs}/usr/local/bin/deno`)).subarray(0, 20);
      assert.equal(new DataView(elf.buffer, elf.byteOffset).getUint16(18, true), 183);
      // The image's entrypoint and environment, run by the emulator inside the image's files.
      await Deno.copyFile(QEMU, `${rootfs}/qemu-aarch64-static`);
      await Deno.chmod(`${rootfs}/qemu-aarch64-static`, 0o755);
      const env = Object.fromEntries(
        (config.config.Env as string[]).map((
          e,
        ) => [e.slice(0, e.indexOf("=")), e.slice(e.indexOf("=") + 1)]),
      );
      const entry = (args: string[]) =>
        new Deno.Command("/usr/sbin/chroot", {
          args: [rootfs, "/qemu-aarch64-static", ...config.config.Entrypoint, ...args],
          env,
          clearEnv: true,
          stdin: "null",
          stdout: "piped",
          stderr: "piped",
        });
      const printed = await entry(["version"]).output();
      assert.equal(
        DECODER.decode(printed.stdout),
        `pods-api ${version}\n`,
        DECODER.decode(printed.stderr),
      );

      daemon = entry([
        "serve",
        "--simulate",
        "--simulate-pods",
        "3",
        "--simulate-churn",
        "0",
        "--metrics-bind-address",
        "127.0.0.1:0",
      ]).spawn();
      const socket = `${rootfs}/var/lib/kubelet/pods-api/pods-api.sock`;
      // Emulated, the start takes a while: a bound, generous wait.
      await poll(async () => {
        try {
          return (await Deno.lstat(socket)).isSocket ? true : undefined;
        } catch {
          return undefined;
        }
      }, { what: "the arm64 daemon's socket", timeoutMs: 300_000, intervalMs: 500 });
      const listed = await entry(["list", "-o", "name"]).output();
      const names = DECODER.decode(listed.stdout).trim().split("\n");
      assert.equal(listed.code, 0, DECODER.decode(listed.stderr));
      assert.equal(names.length, 3, names.join(", "));
      for (const name of names) assert.match(name, /^pod\//);
    } finally {
      if (daemon !== undefined) {
        daemon.kill("SIGTERM");
        await daemon.status;
        await daemon.stdout.cancel().catch(() => {});
        await daemon.stderr.cancel().catch(() => {});
      }
      for (const archive of archives) await Deno.remove(`${ROOT}${archive}`).catch(() => {});
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
