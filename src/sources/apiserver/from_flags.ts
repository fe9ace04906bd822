/**
 * The API server connection `--apiserver` and `--apiserver-kubeconfig` ask
 * for: in-cluster, a kubeconfig, or a bare URL (a kubeconfig's server
 * replaced by it, or alone, without credentials, for a local test server).
 *
 * @module
 */

import { type ApiServerConnection, inClusterConnection } from "./connection.ts";
import { kubeconfigConnection } from "./kubeconfig.ts";

/** `--apiserver`'s value for the pod's own service account and cluster. */
export const IN_CLUSTER = "in-cluster";

/**
 * Reads the two flags.
 *
 * @example Usage
 * ```ts
 * import { apiServerConnectionOf } from "./from_flags.ts";
 * apiServerConnectionOf("", ""); // undefined: the source is off
 * apiServerConnectionOf("http://127.0.0.1:10256", "")?.server; // "http://127.0.0.1:10256"
 * ```
 *
 * @param apiserver `--apiserver`: `in-cluster`, a URL, or `""`.
 * @param kubeconfig `--apiserver-kubeconfig`: a file, or `""`.
 * @returns The connection, or `undefined` when both are empty (the source is off).
 * @throws {TypeError} When a value cannot be used (saying which and why).
 */
export function apiServerConnectionOf(
  apiserver: string,
  kubeconfig: string,
): ApiServerConnection | undefined {
  if (apiserver === "" && kubeconfig === "") return undefined;
  if (apiserver === IN_CLUSTER) {
    if (kubeconfig !== "") {
      throw new TypeError(
        "Cannot use --apiserver in-cluster with --apiserver-kubeconfig: choose one",
      );
    }
    return inClusterConnection();
  }
  if (apiserver !== "") {
    let url: URL | undefined;
    try {
      url = new URL(apiserver);
    } catch {
      url = undefined;
    }
    if (url === undefined || (url.protocol !== "https:" && url.protocol !== "http:")) {
      throw new TypeError(
        `Cannot use --apiserver "${apiserver}": use ${IN_CLUSTER} or an http(s) URL`,
      );
    }
  }
  const server = apiserver.replace(/\/+$/, "");
  if (kubeconfig === "") return { server, origin: "--apiserver" };
  const connection = kubeconfigConnection(kubeconfig);
  return server === "" ? connection : { ...connection, server };
}
