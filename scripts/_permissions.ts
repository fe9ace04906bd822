/**
 * The Deno permissions of the `pods-api` executable, in one place: the
 * compile script bakes them into `dist/pods-api` and the bundle test runs the
 * bundled daemon with the very same list, so a permission the daemon lacks
 * fails in CI rather than on a node.
 *
 * The rule: scope everything whose location the daemon cannot be told to
 * change, and name every default location a flag points at. What stays
 * unscoped and why:
 * - `--allow-net` is whole: Deno scopes UNIX sockets by exact path only
 *   (`unix:/a/b.sock`, no directories), the daemon binds a random temporary
 *   name and renames it into place (DESIGN.md §2), and `--metrics-bind-address`
 *   and the kubelet URL are flags. Which sockets can be created is still
 *   bounded by the write scope below, and systemd's
 *   `RestrictAddressFamilies` / the pod's network bound the rest.
 * - Process metrics would read `/proc/self/*`, which Deno grants only under
 *   `--allow-all`; the figures only it has are left out (not exported as 0)
 *   rather than widening everything.
 * - Read and write also list `/` ({@linkcode CLIENT_SCOPE}), last: the client
 *   commands of the same binary must reach whatever socket path the user
 *   names (connecting needs read and write on it). `serve` revokes `/` before
 *   it does anything else (src/daemon_permissions.ts), which leaves the daemon
 *   exactly the scoped paths: Deno revokes a path grant and the grants above
 *   it, never the narrower ones below.
 *
 * @module
 */

import { CLIENT_SCOPE } from "../src/daemon_permissions.ts";
import { v8FlagsArg } from "./_v8_flags.ts";

export { CLIENT_SCOPE };

/** The socket's directory by default (DESIGN.md §16: the daemon's own home). */
export const DEFAULT_SOCKET_DIR = "/run/pods-api";

/**
 * The kubelet's Pods API directory: the daemon binds its compatibility
 * socket there (`--kubelet-compat-socket`) and reads the kubelet's own socket
 * there (`--kubelet-pods-api-endpoint`); connecting needs read and write.
 */
export const KUBELET_PODS_API_DIR = "/var/lib/kubelet/pods-api";

/**
 * Well-known CRI runtime sockets. Connecting to a UNIX socket needs read and
 * write permission on its path, and Deno compares paths without resolving
 * symlinks, so both the `/run` and `/var/run` spellings are listed.
 */
export const CRI_SOCKETS: readonly string[] = [
  "/run/containerd/containerd.sock",
  "/var/run/containerd/containerd.sock",
  "/run/k3s/containerd/containerd.sock",
  "/run/crio/crio.sock",
  "/var/run/crio/crio.sock",
  "/run/cri-dockerd.sock",
  "/var/run/cri-dockerd.sock",
];

/**
 * The kubelet's podresources socket (`--pod-resources-endpoint`'s default):
 * connecting needs read and write on it, and the daemon looks for it first.
 */
export const PODRESOURCES_SOCKET = "/var/lib/kubelet/pod-resources/kubelet.sock";

/**
 * Files and directories the daemon may read besides its socket directory and
 * the CRI sockets: `/etc/group` (resolving `--socket-group`), the config file
 * directory, the static pod manifests, the kubelet's client certificates, a
 * pod's service account token (for the kubelet `/pods` source), and where the
 * process lookups read the host's `/proc` and cgroup tree (`--host-proc`,
 * `--host-cgroup-root`: Deno reads `/proc` and `/sys` themselves only under
 * `--allow-all`, so they are mounted there; deploy/overlays/process-lookups).
 */
export const READ_PATHS: readonly string[] = [
  "/etc/group",
  "/etc/pods-api",
  "/etc/kubernetes/manifests",
  "/var/lib/kubelet/pki",
  "/var/run/secrets/kubernetes.io/serviceaccount",
  "/run/secrets/kubernetes.io/serviceaccount",
  "/host/proc",
  "/host/sys/fs/cgroup",
];

/**
 * Environment variables the binary may read: the client's socket
 * (`PODS_API_SOCKET`), grpc-js's logging switches, for debugging, and the
 * API server's address in a pod (`--apiserver in-cluster`). Every
 * other variable reads as unset (`--ignore-env`), so grpc-js's optional knobs
 * neither fail nor leak the environment.
 */
export const ENV_VARS: readonly string[] = [
  "PODS_API_SOCKET",
  "GRPC_TRACE",
  "GRPC_VERBOSITY",
  "GRPC_NODE_TRACE",
  "GRPC_NODE_VERBOSITY",
  "KUBERNETES_SERVICE_HOST",
  "KUBERNETES_SERVICE_PORT",
];

/** OS information the daemon reads: the node name default and the socket owner check. */
export const SYS_APIS: readonly string[] = ["hostname", "uid", "networkInterfaces"];

/**
 * `deno run` flags that forbid loading anything besides the bundle itself: no
 * config or lock file looked up, no npm or remote modules; and no V8 code
 * cache, which Deno would keep in its cache directory, read-only or absent
 * under `ProtectSystem=strict` and a read-only root file system.
 */
export const BUNDLE_RUN_FLAGS: readonly string[] = [
  "--no-code-cache",
  "--no-config",
  "--no-lock",
  "--no-npm",
  "--no-remote",
];

/** Options of {@linkcode daemonPermissionFlags}. */
export interface PermissionOptions {
  /**
   * The directory of `--socket`: the daemon creates it, binds, renames and
   * removes its socket there. Tests pass a temporary directory.
   *
   * @default {DEFAULT_SOCKET_DIR}
   */
  socketDir?: string;
}

/**
 * The permission flags of `pods-api`, for `deno compile` and `deno run`.
 *
 * @example Usage
 * ```ts
 * import { daemonPermissionFlags } from "./_permissions.ts";
 * const flags = daemonPermissionFlags({ socketDir: "/tmp/pods-api-test" });
 * ```
 *
 * @param options The socket directory to allow.
 * @returns The flags, in a stable order, never `--allow-all`; remote imports
 *   denied and prompts off (a missing permission is an error, never a question).
 * @throws {TypeError} When `socketDir` is not an absolute path or holds a comma.
 */
export function daemonPermissionFlags(options: PermissionOptions = {}): string[] {
  const socketDir = (options.socketDir ?? DEFAULT_SOCKET_DIR).replace(/\/+$/, "");
  if (!socketDir.startsWith("/") || socketDir.includes(",")) {
    throw new TypeError(
      `Cannot scope permissions to socket directory "${socketDir}": use an absolute path without commas`,
    );
  }
  return [
    `--allow-read=${
      [
        socketDir,
        KUBELET_PODS_API_DIR,
        ...CRI_SOCKETS,
        PODRESOURCES_SOCKET,
        ...READ_PATHS,
        CLIENT_SCOPE,
      ]
        .join(",")
    }`,
    `--allow-write=${
      [socketDir, KUBELET_PODS_API_DIR, ...CRI_SOCKETS, PODRESOURCES_SOCKET, CLIENT_SCOPE].join(",")
    }`,
    "--allow-net",
    `--allow-env=${ENV_VARS.join(",")}`,
    "--ignore-env",
    `--allow-sys=${SYS_APIS.join(",")}`,
    // The bundle imports nothing at run time; a daemon fails, it never prompts.
    "--deny-import",
    "--no-prompt",
  ];
}

/**
 * The whole command that runs the bundle with the daemon's permissions: what
 * the image's entrypoint holds and what docs/OPERATIONS.md tells a systemd
 * install to put in `ExecStart=` (followed by `serve` and its flags).
 *
 * @example Usage
 * ```ts
 * import { bundleCommand } from "./_permissions.ts";
 * const argv = bundleCommand("/usr/local/bin/deno", "/usr/local/lib/pods-api/pods-api.js");
 * ```
 *
 * @param deno The Deno executable.
 * @param bundle The bundle (`dist/pods-api.js` as installed).
 * @param options The socket directory to allow.
 * @returns The argv, up to and including the bundle's path.
 * @throws {TypeError} When `socketDir` is not an absolute path or holds a comma.
 */
export function bundleCommand(
  deno: string,
  bundle: string,
  options: PermissionOptions = {},
): string[] {
  return [
    deno,
    "run",
    ...BUNDLE_RUN_FLAGS,
    v8FlagsArg(),
    ...daemonPermissionFlags(options),
    bundle,
  ];
}
