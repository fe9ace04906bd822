/**
 * `pods-api kubeconfig`: a kubeconfig that points kubectl (or any client-go
 * or python-kubernetes client) at the daemon's HTTP API, built from the same
 * flags `serve` takes.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { stringify as toYaml } from "yaml";
import { SERVE_FLAGS } from "../config_flags.ts";
import { servingCaFile } from "../tls/mod.ts";

/** What the kubeconfig says. */
export interface KubeconfigOptions {
  /** `http://host:port` or `https://host:port`. */
  server: string;
  /** The bearer token file (kept as a path: the token itself stays out of the file). */
  tokenFile?: string;
  /** PEM of the CA (or self-signed certificate) that signed the serving certificate. */
  certificateAuthorityPem?: string;
  /** Cluster, user and context name. @default {"pods-api"} */
  name?: string;
}

/**
 * Renders a kubeconfig.
 *
 * @example
 * ```ts
 * renderKubeconfig({ server: "http://127.0.0.1:9470" });
 * ```
 *
 * @param options Server, token file, CA and name.
 * @returns The kubeconfig YAML.
 */
export function renderKubeconfig(options: KubeconfigOptions): string {
  const name = options.name ?? "pods-api";
  const cluster: Record<string, string> = { server: options.server };
  if (options.certificateAuthorityPem !== undefined) {
    cluster["certificate-authority-data"] = btoa(options.certificateAuthorityPem);
  }
  const user: Record<string, string> = {};
  if (options.tokenFile) user.tokenFile = options.tokenFile;
  return toYaml({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name, cluster }],
    users: [{ name, user }],
    contexts: [{ name, context: { cluster: name, user: name, namespace: "default" } }],
    "current-context": name,
    preferences: {},
  });
}

/** The flags of `pods-api kubeconfig`: the daemon's own, and the kubeconfig's name. */
export const KUBECONFIG_FLAGS = {
  "http-bind-address": { type: "string", default: "" },
  "http-token-file": { type: "string", default: "" },
  "http-tls-cert-file": { type: "string", default: "" },
  "http-cert-dir": { type: "string", default: SERVE_FLAGS["http-cert-dir"].default },
  "name": { type: "string", default: "pods-api" },
} as const;

/** Usage of the subcommand. */
export const KUBECONFIG_USAGE =
  "  pods-api kubeconfig --http-bind-address HOST:PORT [--http-token-file F] [--http-tls-cert-file F | --http-cert-dir D]";

/**
 * Runs `pods-api kubeconfig` with the daemon's own flag names.
 *
 * As `serve` does, a token without `--http-tls-cert-file` means HTTPS with
 * the self-signed certificate the daemon keeps in `--http-cert-dir`: its CA
 * is embedded, so it must have started once.
 *
 * @param args Arguments after `kubeconfig`.
 * @param readTextFile Reads the certificate file.
 * @returns The kubeconfig YAML.
 * @throws {TypeError} For a missing or malformed `--http-bind-address`, or no kept certificate yet.
 */
export function kubeconfigCommand(
  args: readonly string[],
  readTextFile: (path: string) => string,
): string {
  const { values } = parseArgs({ args: [...args], options: KUBECONFIG_FLAGS, strict: true });
  const bind = values["http-bind-address"] as string;
  if (!/^(\[[^\]]+\]|[^:]+):\d{1,5}$/.test(bind)) {
    throw new TypeError(
      `Cannot make a kubeconfig: give the daemon's --http-bind-address as host:port, got "${bind}"`,
    );
  }
  const tokenFile = values["http-token-file"] as string;
  const cert = values["http-tls-cert-file"] as string;
  let caPem: string | undefined;
  if (cert !== "") caPem = readTextFile(cert);
  else if (tokenFile !== "") {
    const dir = values["http-cert-dir"] as string;
    try {
      caPem = readTextFile(servingCaFile(dir));
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
      throw new TypeError(
        `Cannot make a kubeconfig: no serving certificate in --http-cert-dir "${dir}" yet; pods-api serve makes it when it starts with --http-token-file`,
      );
    }
  }
  return renderKubeconfig({
    server: `${caPem === undefined ? "http" : "https"}://${bind}`,
    ...(tokenFile === "" ? {} : { tokenFile }),
    ...(caPem === undefined ? {} : { certificateAuthorityPem: caPem }),
    name: values.name as string,
  });
}
