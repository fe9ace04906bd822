/**
 * The programs and modules from outside Deno that some tests need ("peers":
 * kubectl, protoc, promtool, Python grpcio, Go, h2spec, openssl, ...), and
 * the one gate every such test goes through, {@linkcode requirePeer}: a
 * missing peer ignores the test (its name says why), unless
 * `PODS_API_REQUIRE_PEERS=1` (CI: `.ci/run` sets it), where the test runs and
 * fails at once naming what to install.
 *
 * @module
 */

import { fileURLToPath } from "node:url";

/**
 * Whether a missing peer fails the test instead of ignoring it.
 *
 * @returns `true` under `PODS_API_REQUIRE_PEERS=1`.
 */
export function peersRequired(): boolean {
  return Deno.env.get("PODS_API_REQUIRE_PEERS") === "1";
}

/** One program or module a test needs, and how to get it. */
export interface PeerRequirement {
  /** What is needed, e.g. "go (Go toolchain)". */
  readonly what: string;
  /** How to get it, e.g. "apt-get install golang-go". */
  readonly install: string;
  /** Returns true when it is there. */
  readonly probe: () => boolean;
}

/**
 * Whether a command runs and exits 0.
 *
 * @param cmd The program.
 * @param args Its arguments.
 * @returns `true` on exit 0.
 */
export function commandSucceeds(cmd: string, args: string[]): boolean {
  try {
    return new Deno.Command(cmd, { args, stdout: "null", stderr: "null" }).outputSync().success;
  } catch {
    return false;
  }
}

/**
 * Whether a path exists.
 *
 * @param path The path.
 * @returns `true` when `stat` succeeds.
 */
export function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * The h2spec binary: `PODS_API_H2SPEC`, else the workplace's own build of it,
 * outside the repository (`../shared/tools/h2spec` beside the checkout, or
 * `/work/shared/tools/h2spec`); on another machine, set `PODS_API_H2SPEC`.
 */
export const H2SPEC: string = Deno.env.get("PODS_API_H2SPEC") ??
  [
    fileURLToPath(new URL("../../../shared/tools/h2spec", import.meta.url)),
    "/work/shared/tools/h2spec",
  ].find(exists) ??
  fileURLToPath(new URL("../../../shared/tools/h2spec", import.meta.url));

/** Debian's python3 importing `modules`. */
function python(modules: string, apt: string): PeerRequirement {
  return {
    what: `python3 ${modules} (/usr/bin/python3 -c 'import ${modules}')`,
    install: `apt-get install ${apt}`,
    probe: () => commandSucceeds("/usr/bin/python3", ["-c", `import ${modules}`]),
  };
}

/** Every peer a test of this repository needs. */
export const PEERS = {
  /** The Go toolchain. */
  go: {
    what: "go (Go toolchain)",
    install: "apt-get install golang-go",
    probe: () => commandSucceeds("go", ["version"]),
  },
  /** Debian's grpc-go 1.33 sources (GOPATH mode). */
  grpcGo: {
    what: "grpc-go sources in /usr/share/gocode",
    install: "apt-get install golang-google-grpc-dev",
    probe: () => exists("/usr/share/gocode/src/google.golang.org/grpc/server.go"),
  },
  /** Python grpcio (C-core). */
  grpcio: python("grpc", "python3-grpcio"),
  /** Python protobuf (protoc's descriptors at run time). */
  pythonProtobuf: python("google.protobuf", "python3-protobuf"),
  /** Python h2 and hpack (the raw HTTP/2 fuzzer). */
  h2: python("h2, hpack", "python3-h2"),
  /** Python hpack (python3-h2 depends on it). */
  hpack: python("hpack", "python3-hpack"),
  /** The official Kubernetes Python client. */
  pythonKubernetes: python("kubernetes", "python3-kubernetes"),
  /** Node.js. */
  node: {
    what: "node (Node.js >= 18)",
    install: "apt-get install nodejs",
    probe: () => commandSucceeds("node", ["-v"]),
  },
  /** npm (grpc-js for Node is installed by the test). */
  npm: { what: "npm", install: "apt-get install npm", probe: () => commandSucceeds("npm", ["-v"]) },
  /** kubectl. */
  kubectl: {
    what: "kubectl (/usr/bin/kubectl)",
    install: "apt-get install kubectl",
    probe: () => commandSucceeds("/usr/bin/kubectl", ["version", "--client"]),
  },
  /** The protobuf compiler. */
  protoc: {
    what: "protoc (/usr/bin/protoc)",
    install: "apt-get install protobuf-compiler",
    probe: () => commandSucceeds("/usr/bin/protoc", ["--version"]),
  },
  /** Prometheus' promtool. */
  promtool: {
    what: "promtool (/usr/bin/promtool)",
    install: "apt-get install prometheus",
    probe: () => commandSucceeds("/usr/bin/promtool", ["--version"]),
  },
  /** systemd-analyze (unit verification and security rating). */
  systemdAnalyze: {
    what: "systemd-analyze",
    install: "apt-get install systemd",
    probe: () => commandSucceeds("systemd-analyze", ["--version"]),
  },
  /** openssl (test certificates, an mTLS server). */
  openssl: {
    what: "openssl",
    install: "apt-get install openssl",
    probe: () => commandSucceeds("openssl", ["version"]),
  },
  /** curl (the README's HTTP examples). */
  curl: {
    what: "curl (/usr/bin/curl)",
    install: "apt-get install curl",
    probe: () => commandSucceeds("/usr/bin/curl", ["--version"]),
  },
  /** readelf (an image's program interpreter and libraries). */
  readelf: {
    what: "readelf",
    install: "apt-get install binutils",
    probe: () => commandSucceeds("readelf", ["--version"]),
  },
  /** Debian's arm64 C library and libgcc (the arm64 image's libraries). */
  arm64Libraries: {
    what: "arm64 libc and libgcc in /usr/aarch64-linux-gnu/lib",
    install: "apt-get install libc6-arm64-cross libgcc-s1-arm64-cross",
    probe: () =>
      ["libc.so.6", "libgcc_s.so.1"].every((f) => exists(`/usr/aarch64-linux-gnu/lib/${f}`)),
  },
  /** buildah, which builds the image from deploy/Containerfile. */
  buildah: {
    what: "buildah (/usr/bin/buildah)",
    install: "apt-get install buildah",
    probe: () => commandSucceeds("/usr/bin/buildah", ["--version"]),
  },
  /** The CNCF distribution registry (the image's push). */
  dockerRegistry: {
    what: "docker-registry (/usr/bin/docker-registry)",
    install: "apt-get install docker-registry",
    probe: () => commandSucceeds("/usr/bin/docker-registry", ["--version"]),
  },
  /** qemu's static arm64 user-mode emulator. */
  qemuAarch64: {
    what: "qemu-aarch64-static (/usr/bin/qemu-aarch64-static)",
    install: "apt-get install qemu-user-static",
    probe: () => commandSucceeds("/usr/bin/qemu-aarch64-static", ["--version"]),
  },
  /** Root, for chroot(8). */
  root: {
    what: "root (chroot needs it)",
    install: "run the tests as root",
    probe: () => Deno.uid() === 0,
  },
  /** h2spec, the HTTP/2 conformance suite (not packaged by Debian). */
  h2spec: {
    what: `h2spec at ${H2SPEC} (or PODS_API_H2SPEC)`,
    install:
      "build h2spec (github.com/summerwind/h2spec) and set PODS_API_H2SPEC; the workplace keeps a build in ../shared/tools",
    probe: () => exists(H2SPEC),
  },
} as const satisfies Record<string, PeerRequirement>;

/** Probes already run in this process, by requirement. */
const probed = new Map<PeerRequirement, boolean>();

/** What {@linkcode requirePeer} decided for a test. */
export interface PeerGate {
  /** For `Deno.test`'s `ignore`: a peer is missing and peers are not required. */
  readonly ignore: boolean;
  /** The missing peers and how to get each; `undefined` when none is missing. */
  readonly missing: string | undefined;
  /**
   * The test's name, with the reason when it is ignored.
   *
   * @param title The test's name.
   * @returns `title`, or `title (ignored: ...)`.
   */
  name(title: string): string;
  /**
   * Call first in the test: throws when a peer is missing (which, since the
   * test runs, means peers are required).
   *
   * @throws {Error} Naming what is missing and how to get it.
   */
  check(): void;
}

/**
 * Decides whether a test that needs peers runs: when one is missing it is
 * ignored, unless `PODS_API_REQUIRE_PEERS=1`, where it runs and
 * {@linkcode PeerGate.check} fails it at once saying what to install.
 *
 * @example Usage
 * ```ts ignore
 * const peer = requirePeer(PEERS.kubectl);
 * Deno.test({ name: peer.name("kubectl lists pods"), ignore: peer.ignore, fn() {
 *   peer.check();
 *   // ...
 * } });
 * ```
 *
 * @param requirements What the test needs.
 * @returns The gate.
 */
export function requirePeer(...requirements: readonly PeerRequirement[]): PeerGate {
  const missing = requirements.filter((r) => {
    let present = probed.get(r);
    if (present === undefined) probed.set(r, present = r.probe());
    return !present;
  });
  const reason = missing.length === 0
    ? undefined
    : missing.map((m) => `${m.what}: ${m.install}`).join("; ");
  const ignore = reason !== undefined && !peersRequired();
  return {
    ignore,
    missing: reason,
    name: (title) => ignore ? `${title} (ignored: ${reason})` : title,
    check() {
      if (reason !== undefined) throw new Error(`Missing test peer: ${reason}`);
    },
  };
}
