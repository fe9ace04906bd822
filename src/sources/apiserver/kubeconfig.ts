/**
 * A kubeconfig file read into an {@linkcode ApiServerConnection}: the
 * current context's cluster (server, CA file or data) and user (token or
 * token file, client certificate and key as files or data), with relative
 * paths resolved against the kubeconfig's directory, as client-go does.
 * Exec plugins and auth providers are refused with a message saying what to
 * use instead: this daemon runs no other programs.
 *
 * @module
 */

import { parse as parseYaml } from "yaml";
import { isJsonObject, type JsonObject } from "../../model/json.ts";
import type { ApiServerConnection, PemSource } from "./connection.ts";

/** Options of {@linkcode kubeconfigConnection}. */
export interface KubeconfigOptions {
  /** A context other than `current-context`. */
  context?: string;
  /** Reads the file. @default {Deno.readTextFileSync} */
  readText?: (path: string) => string;
}

const BASE64 = /^[A-Za-z0-9+/=\s]*$/;

function dirOf(path: string): string {
  const at = path.lastIndexOf("/");
  return at < 0 ? "." : at === 0 ? "/" : path.slice(0, at);
}

function decodeData(value: string, what: string, fail: (why: string) => never): string {
  if (!BASE64.test(value)) fail(`${what} is not base64`);
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(
      Uint8Array.from(atob(value.replace(/\s+/g, "")), (c) => c.charCodeAt(0)),
    );
  } catch {
    return fail(`${what} is not base64 of a PEM text`);
  }
}

function named(list: unknown, name: string, key: string): JsonObject | undefined {
  if (!Array.isArray(list)) return undefined;
  for (const entry of list) {
    if (isJsonObject(entry) && entry.name === name && isJsonObject(entry[key])) {
      return entry[key] as JsonObject;
    }
  }
  return undefined;
}

function text(object: JsonObject, key: string): string {
  const value = object[key];
  return typeof value === "string" ? value : "";
}

/**
 * Reads a kubeconfig.
 *
 * @example Usage
 * ```ts
 * import { kubeconfigConnection } from "./kubeconfig.ts";
 * const yaml = `
 * clusters: [{name: c, cluster: {server: "https://10.0.0.1:6443"}}]
 * users: [{name: u, user: {tokenFile: token}}]
 * contexts: [{name: x, context: {cluster: c, user: u}}]
 * current-context: x
 * `;
 * const c = kubeconfigConnection("/etc/pods-api/kubeconfig", { readText: () => yaml });
 * console.assert(c.server === "https://10.0.0.1:6443");
 * console.assert(c.token !== undefined && "file" in c.token && c.token.file === "/etc/pods-api/token");
 * ```
 *
 * @param path The kubeconfig file.
 * @param options Context and file reader.
 * @returns The connection of the chosen context.
 * @throws {TypeError} When the file cannot be read or parsed, names no usable
 *   context, cluster or server, or asks for an authentication this daemon
 *   does not do (exec, auth-provider, basic auth).
 */
export function kubeconfigConnection(
  path: string,
  options: KubeconfigOptions = {},
): ApiServerConnection {
  const fail = (why: string): never => {
    throw new TypeError(`Cannot use kubeconfig "${path}": ${why}`);
  };
  let doc: unknown;
  try {
    doc = parseYaml((options.readText ?? Deno.readTextFileSync)(path));
  } catch (error) {
    return fail(error instanceof Error ? error.message : String(error));
  }
  if (!isJsonObject(doc)) return fail("it is not a kubeconfig (no mapping at the top)");
  let contextName = options.context ?? text(doc, "current-context");
  if (contextName === "") {
    const contexts = Array.isArray(doc.contexts) ? doc.contexts : [];
    const only = contexts.length === 1 && isJsonObject(contexts[0]) ? contexts[0].name : undefined;
    if (typeof only !== "string") return fail("it has no current-context");
    contextName = only;
  }
  const context = named(doc.contexts, contextName, "context") ??
    fail(`it has no context "${contextName}"`);
  const clusterName = text(context, "cluster");
  const cluster = named(doc.clusters, clusterName, "cluster") ??
    fail(`context "${contextName}" names cluster "${clusterName}", which it does not define`);
  const userName = text(context, "user");
  const user = userName === "" ? {} : named(doc.users, userName, "user") ??
    fail(`context "${contextName}" names user "${userName}", which it does not define`);
  const server = text(cluster, "server").replace(/\/+$/, "");
  if (server === "") return fail(`cluster "${clusterName}" has no server`);
  try {
    const url = new URL(server);
    if (url.protocol !== "https:" && url.protocol !== "http:") throw new TypeError();
  } catch {
    return fail(`cluster "${clusterName}" has server "${server}", which is not an http(s) URL`);
  }
  for (const key of ["tls-server-name", "proxy-url"]) {
    if (text(cluster, key) !== "") {
      fail(`cluster "${clusterName}" sets ${key}, which this daemon does not support`);
    }
  }
  for (const key of ["exec", "auth-provider", "username", "password"]) {
    if (user[key] !== undefined) {
      fail(
        `user "${userName}" authenticates with ${key}, which this daemon does not support: use token, tokenFile or a client certificate`,
      );
    }
  }
  const base = dirOf(path);
  const resolvePath = (p: string) => p.startsWith("/") ? p : `${base}/${p}`;
  const pem = (object: JsonObject, fileKey: string, dataKey: string): PemSource | undefined => {
    const data = text(object, dataKey);
    if (data !== "") return { pem: decodeData(data, dataKey, fail) };
    const file = text(object, fileKey);
    return file === "" ? undefined : { file: resolvePath(file) };
  };
  const ca = pem(cluster, "certificate-authority", "certificate-authority-data");
  const clientCert = pem(user, "client-certificate", "client-certificate-data");
  const clientKey = pem(user, "client-key", "client-key-data");
  if ((clientCert === undefined) !== (clientKey === undefined)) {
    fail(
      `user "${userName}" has a client certificate without its key, or a key without its certificate`,
    );
  }
  const token = text(user, "token");
  const tokenFile = text(user, "tokenFile");
  return {
    server,
    ...(ca ? { ca } : {}),
    ...(clientCert && clientKey ? { clientCert, clientKey } : {}),
    // client-go: token wins over tokenFile.
    ...(token !== ""
      ? { token: { token } }
      : tokenFile !== ""
      ? { token: { file: resolvePath(tokenFile) } }
      : {}),
    ...(cluster["insecure-skip-tls-verify"] === true ? { insecureSkipTlsVerify: true } : {}),
    origin: `kubeconfig "${path}"`,
  };
}
