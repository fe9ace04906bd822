// `deno task image` writes one OCI image index for linux/amd64 and
// linux/arm64; the arm64 image's own entrypoint runs under Debian's
// qemu-user-static (in a chroot of the image's root file system): it prints
// the version, and a short `serve --simulate` answers the image's own `list`.
// (The amd64 image runs on a real containerd: tests/real_cri/image_test.ts.)
import assert from "node:assert/strict";
import { poll } from "../_support/poll.ts";
import { PEERS, requirePeer } from "../_support/peers.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const QEMU = "/usr/bin/qemu-aarch64-static";
const DECODER = new TextDecoder();

// Building the index needs the arm64 libraries (found with readelf) and npm
// (to pack the arm64 Deno); running its entrypoint needs qemu in a chroot.
const PEER = requirePeer(
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

Deno.test({
  name: PEER.name(
    "the image index's arm64 image runs its entrypoint under qemu: version, serve and list",
  ),
  ignore: PEER.ignore,
  async fn() {
    PEER.check();
    const dir = await Deno.makeTempDir({ prefix: "pods-api-multiarch-" });
    const archive = `dist/multiarch-test-${crypto.randomUUID().slice(0, 8)}.tar`;
    let daemon: Deno.ChildProcess | undefined;
    try {
      const built = await new Deno.Command(Deno.execPath(), {
        args: ["task", "--quiet", "image", "--output", archive],
        cwd: ROOT,
        stdout: "piped",
        stderr: "piped",
      }).output();
      const log = DECODER.decode(built.stderr);
      assert.equal(built.code, 0, log);
      assert.match(log, /image: linux\/amd64: manifest sha256:/);
      assert.match(log, /image: linux\/arm64: manifest sha256:/);
      const version = /\(pods-api (\S+), deno/.exec(log)?.[1];
      assert.ok(version, log);

      const out = `${dir}/layout`;
      const rootfs = `${dir}/rootfs`;
      await Deno.mkdir(out);
      await Deno.mkdir(rootfs);
      await sh("tar", ["-xf", `${ROOT}${archive}`, "-C", out]);
      const blob = (d: string) => `${out}/blobs/sha256/${d.slice("sha256:".length)}`;
      const json = async (d: string) => JSON.parse(await Deno.readTextFile(blob(d)));
      const layout = JSON.parse(await Deno.readTextFile(`${out}/index.json`));
      const index = await json(layout.manifests[0].digest);
      const platforms = (index.manifests as Descriptor[]).map((m) =>
        `${m.platform?.os}/${m.platform?.architecture}`
      );
      assert.deepEqual(platforms, ["linux/amd64", "linux/arm64"]);
      const arm = (index.manifests as Descriptor[]).find((m) =>
        m.platform?.architecture === "arm64"
      )!;
      const manifest = await json(arm.digest);
      const config = await json(manifest.config.digest);
      assert.equal(config.architecture, "arm64");
      for (const layer of manifest.layers) {
        await sh("tar", ["-xzf", blob(layer.digest), "-C", rootfs]);
      }
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
      await Deno.remove(`${ROOT}${archive}`).catch(() => {});
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
