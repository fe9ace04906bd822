/**
 * Where the API server is and how to authenticate to it: the values a
 * kubeconfig or the in-cluster environment give, as client-go reads them.
 * Files stay paths (read at every request by the client), so a rotated
 * token or certificate is picked up without a restart.
 *
 * @module
 */

/** The service account token of a pod (projected: the kubelet rotates it). */
export const IN_CLUSTER_TOKEN_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/token";

/** The cluster CA a pod's service account gets. */
export const IN_CLUSTER_CA_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";

/** A PEM value: given inline (`*-data` of a kubeconfig) or as a file read at every use. */
export type PemSource = { readonly pem: string } | { readonly file: string };

/** A bearer token: inline, or a file read at every request (rotation). */
export type TokenSource = { readonly token: string } | { readonly file: string };

/** How to reach and authenticate to one API server. */
export interface ApiServerConnection {
  /** Base URL, `https://host:port` (or `http://` for a test server), without a trailing slash. */
  readonly server: string;
  /** CA bundle the server's certificate is checked against; absent: the system roots. */
  readonly ca?: PemSource;
  /** Client certificate and key (x509 authentication); both or neither. */
  readonly clientCert?: PemSource;
  readonly clientKey?: PemSource;
  readonly token?: TokenSource;
  /** The kubeconfig asked not to verify the server (needs Deno's process-wide flag). */
  readonly insecureSkipTlsVerify?: boolean;
  /** Where these values came from, for messages ("in-cluster", "kubeconfig FILE"). */
  readonly origin: string;
}

/** What {@linkcode inClusterConnection} reads; tests replace it. */
export interface InClusterEnvironment {
  /** Reads an environment variable. @default {Deno.env.get} */
  env?: (name: string) => string | undefined;
  /** Whether a file exists. @default {a Deno.stat} */
  exists?: (path: string) => boolean;
  /** @default {IN_CLUSTER_TOKEN_FILE} */
  tokenFile?: string;
  /** @default {IN_CLUSTER_CA_FILE} */
  caFile?: string;
}

function fileExists(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

/**
 * Joins a host and port into a URL authority (IPv6 in brackets), as Go's
 * `net.JoinHostPort`.
 *
 * @param host A host name or address.
 * @param port A port.
 * @returns `host:port` or `[v6]:port`.
 */
export function joinHostPort(host: string, port: string): string {
  return host.includes(":") && !host.startsWith("[") ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * The in-cluster connection as client-go's `rest.InClusterConfig` builds it:
 * `https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`, the service
 * account token file (re-read as it rotates) and its CA.
 *
 * @example Usage
 * ```ts
 * import { inClusterConnection } from "./connection.ts";
 * const env: Record<string, string> = { KUBERNETES_SERVICE_HOST: "10.96.0.1", KUBERNETES_SERVICE_PORT: "443" };
 * const c = inClusterConnection({ env: (n) => env[n], exists: () => true });
 * console.assert(c.server === "https://10.96.0.1:443");
 * ```
 *
 * @param environment Environment and file checks (tests replace them).
 * @returns The connection.
 * @throws {TypeError} When the variables are unset or the token file is missing
 *   (not running in a pod, or `automountServiceAccountToken: false`).
 */
export function inClusterConnection(environment: InClusterEnvironment = {}): ApiServerConnection {
  const env = environment.env ?? ((name: string) => Deno.env.get(name));
  const exists = environment.exists ?? fileExists;
  const tokenFile = environment.tokenFile ?? IN_CLUSTER_TOKEN_FILE;
  const caFile = environment.caFile ?? IN_CLUSTER_CA_FILE;
  const host = env("KUBERNETES_SERVICE_HOST") ?? "";
  const port = env("KUBERNETES_SERVICE_PORT") ?? "";
  if (host === "" || port === "") {
    throw new TypeError(
      "Cannot use --apiserver in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set (run in a pod, or use --apiserver-kubeconfig)",
    );
  }
  if (!exists(tokenFile)) {
    throw new TypeError(
      `Cannot use --apiserver in-cluster: no service account token at "${tokenFile}" (is automountServiceAccountToken false?)`,
    );
  }
  return {
    server: `https://${joinHostPort(host, port)}`,
    token: { file: tokenFile },
    // client-go goes on without the CA file (system roots); so does this.
    ...(exists(caFile) ? { ca: { file: caFile } } : {}),
    origin: "in-cluster",
  };
}
