/**
 * Which socket a client command talks to: `--socket`, else
 * `PODS_API_SOCKET`, else the `socket` key of the daemon's config file, else
 * the daemon's own default path, else the kubelet's Pods API path (DESIGN.md §16).
 * The config file is the one `--config` names, else
 * `/etc/pods-api/config.yaml` when it exists (the path the systemd unit uses).
 *
 * @module
 */

import { parse as parseYaml } from "yaml";
import { isJsonObject } from "../model/json.ts";
import { defaultSocket } from "./default_socket.ts";

/** The config file read when `--config` is not given. */
export const DEFAULT_CONFIG_FILE = "/etc/pods-api/config.yaml";

/** The environment variable naming the socket. */
export const SOCKET_ENV = "PODS_API_SOCKET";

/** Where the socket path came from, for messages. */
export type SocketOrigin = "--socket" | "PODS_API_SOCKET" | "config file" | "default";

/** A resolved socket path. */
export interface ResolvedSocket {
  /** The socket path. */
  readonly path: string;
  /** Where it came from. */
  readonly origin: SocketOrigin;
}

/** Inputs of {@linkcode resolveSocket}. */
export interface ResolveSocketOptions {
  /** `--socket`, when given. */
  flag?: string | undefined;
  /** `--config`, when given. */
  configFile?: string | undefined;
  /** Reads an environment variable. @default {Deno.env.get} */
  env?: (name: string) => string | undefined;
  /** Reads a file; `undefined` when it does not exist. @default {Deno.readTextFileSync} */
  readFile?: (path: string) => string | undefined;
  /** Whether a socket is at a path (picks the default). @default {an lstat} */
  socketExists?: (path: string) => boolean;
}

/**
 * Resolves the socket path.
 *
 * @example Usage
 * ```ts
 * import { resolveSocket } from "./socket_path.ts";
 * resolveSocket({ flag: "/tmp/pods.sock" }); // { path: "/tmp/pods.sock", origin: "--socket" }
 * ```
 *
 * @param options The flag, config file and readers.
 * @returns The path and where it came from.
 * @throws {TypeError} When a config file named by `--config` is missing or malformed.
 */
export function resolveSocket(options: ResolveSocketOptions = {}): ResolvedSocket {
  if (options.flag !== undefined && options.flag !== "") {
    return { path: options.flag, origin: "--socket" };
  }
  const env = options.env ?? readEnv;
  const fromEnv = env(SOCKET_ENV);
  if (fromEnv !== undefined && fromEnv !== "") return { path: fromEnv, origin: SOCKET_ENV };
  const read = options.readFile ?? readFileIfPresent;
  const explicit = options.configFile !== undefined && options.configFile !== "";
  const file = explicit ? options.configFile! : DEFAULT_CONFIG_FILE;
  const text = read(file);
  if (text === undefined) {
    if (explicit) throw new TypeError(`Cannot read config file "${file}"`);
    return { path: defaultSocket(options.socketExists), origin: "default" };
  }
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    throw new TypeError(`Cannot parse config file "${file}": ${(err as Error).message}`);
  }
  if (isJsonObject(doc) && typeof doc.socket === "string" && doc.socket !== "") {
    return { path: doc.socket, origin: "config file" };
  }
  return { path: defaultSocket(options.socketExists), origin: "default" };
}

function readEnv(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    // Not permitted (a binary run with --ignore-env): as if unset.
    return undefined;
  }
}

function readFileIfPresent(path: string): string | undefined {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    // Missing or unreadable: a config file the user cannot read is no config file.
    return undefined;
  }
}
