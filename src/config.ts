/**
 * `pods-api serve` configuration: flags, an optional config file under them,
 * defaults under both. The only reader of command-line arguments for `serve`.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { parse as parseYaml } from "yaml";
import { isJsonObject } from "./model/json.ts";
import { LOG_LEVELS, type LogLevel } from "./log.ts";
import { parseDuration } from "./duration.ts";
import { SERVE_FLAGS, type ServeFlag } from "./config_flags.ts";

/** The effective configuration of `serve`. */
export interface ServeConfig {
  readonly socket: string;
  readonly socketGroup: string;
  readonly metricsHost: string;
  readonly metricsPort: number;
  readonly nodeName: string;
  readonly runtimeEndpoint: string;
  readonly nodeIPs: readonly string[];
  readonly runtimeRequestTimeoutMs: number;
  readonly runtimeWaitTimeoutMs: number;
  readonly relistPeriodMs: number;
  readonly podManifestPath: string;
  readonly fileCheckFrequencyMs: number;
  readonly kubeletUrl: string;
  readonly kubeletTokenFile: string;
  readonly kubeletClientCert: string;
  readonly kubeletClientKey: string;
  readonly kubeletCaFile: string;
  readonly kubeletInsecureSkipTlsVerify: boolean;
  readonly kubeletPollPeriodMs: number;
  readonly bestEffortSources: readonly string[];
  readonly bestEffortTimeoutMs: number;
  readonly relistThresholdMs: number;
  readonly rateLimitQps: number;
  readonly rateLimitBurst: number;
  readonly watchQueueSize: number;
  readonly maxWatchers: number;
  readonly connectionRateLimitQps: number;
  readonly connectionRateLimitBurst: number;
  /** `--watch-history`: how long changes stay resumable, ms. */
  readonly watchHistoryMs: number;
  /** `--watch-history`: how many changes stay resumable. */
  readonly watchHistoryEvents: number;
  readonly tombstoneTtlMs: number;
  /** The HTTP API's address; `undefined` when `--http-bind-address` is empty. */
  readonly httpBind: { readonly host: string; readonly port: number } | undefined;
  readonly httpTokenFile: string;
  readonly httpTlsCertFile: string;
  readonly httpTlsKeyFile: string;
  /** Where the self-signed serving certificate is kept (token set, no certificate given). */
  readonly httpCertDir: string;
  readonly httpBookmarkPeriodMs: number;
  readonly simulate: boolean;
  readonly simulatePods: number;
  readonly simulateChurn: number;
  readonly simulateSeed: number;
  readonly simulateSyncDelayMs: number;
  readonly logLevel: LogLevel;
  readonly printConfig: boolean;
  /** Where each value came from, for `--print-config`. */
  readonly raw: Readonly<Record<ServeFlag, string | boolean>>;
}

/** Options of {@linkcode parseServeConfig}. */
export interface ParseConfigOptions {
  /** Reads the config file (injected for tests). */
  readTextFile?: (path: string) => string;
  /** The host name, used when `--hostname-override` is empty. */
  hostname?: () => string;
}

/**
 * Parses `serve` arguments and the config file they name.
 *
 * @param args Arguments after `serve`.
 * @param options File reader and host name source.
 * @returns The frozen configuration.
 * @throws {TypeError} For unknown flags or keys, and values of the wrong type.
 * @throws {RangeError} For values out of range.
 */
export function parseServeConfig(
  args: readonly string[],
  options: ParseConfigOptions = {},
): ServeConfig {
  const spec: Record<string, { type: "string" | "boolean" }> = {};
  for (const [name, flag] of Object.entries(SERVE_FLAGS)) {
    spec[name] = { type: flag.type === "boolean" ? "boolean" : "string" };
  }
  let parsed;
  try {
    parsed = parseArgs({ args: [...args], options: spec, strict: true, allowPositionals: false });
  } catch (err) {
    throw new TypeError((err as Error).message);
  }
  const fromFlags = parsed.values as Record<string, string | boolean | undefined>;
  const raw: Record<string, string | boolean> = {};
  for (const [name, flag] of Object.entries(SERVE_FLAGS)) raw[name] = flag.default;
  const configPath = fromFlags["config"];
  if (typeof configPath === "string" && configPath !== "") {
    const read = options.readTextFile ?? ((path: string) => Deno.readTextFileSync(path));
    Object.assign(raw, readConfigFile(configPath, read(configPath)));
  }
  for (const [name, value] of Object.entries(fromFlags)) if (value !== undefined) raw[name] = value;
  return buildConfig(raw as Record<ServeFlag, string | boolean>, options);
}

function readConfigFile(path: string, text: string): Record<string, string | boolean> {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    throw new TypeError(`Cannot parse config file "${path}": ${(err as Error).message}`);
  }
  if (doc === null || doc === undefined) return {};
  if (!isJsonObject(doc)) throw new TypeError(`Cannot use config file "${path}": not a mapping`);
  const out: Record<string, string | boolean> = {};
  for (const [key, value] of Object.entries(doc)) {
    if (!(key in SERVE_FLAGS) || key === "config" || key === "print-config") {
      throw new TypeError(`Cannot use config file "${path}": unknown key "${key}"`);
    }
    const flag = SERVE_FLAGS[key as ServeFlag];
    if (flag.type === "boolean") {
      if (typeof value !== "boolean") {
        throw new TypeError(`Cannot use config file "${path}": "${key}" must be true or false`);
      }
      out[key] = value;
    } else if (typeof value === "string" || typeof value === "number") {
      out[key] = String(value);
    } else {
      throw new TypeError(`Cannot use config file "${path}": "${key}" must be a string or number`);
    }
  }
  return out;
}

function str(raw: Record<ServeFlag, string | boolean>, name: ServeFlag): string {
  const value = raw[name];
  if (typeof value !== "string") throw new TypeError(`Flag "--${name}" takes a value`);
  return value;
}

function num(raw: Record<ServeFlag, string | boolean>, name: ServeFlag, min: number): number {
  const text = str(raw, name);
  const value = Number(text);
  if (text.trim() === "" || !Number.isFinite(value)) {
    throw new TypeError(`Cannot parse "--${name}" value "${text}": not a number`);
  }
  if (SERVE_FLAGS[name].type === "integer" && !Number.isInteger(value)) {
    throw new TypeError(`Cannot parse "--${name}" value "${text}": not an integer`);
  }
  if (value < min) throw new RangeError(`Flag "--${name}" must be at least ${min}, got "${text}"`);
  return value;
}

function dur(raw: Record<ServeFlag, string | boolean>, name: ServeFlag, minMs: number): number {
  const text = str(raw, name);
  let ms: number;
  try {
    ms = parseDuration(text);
  } catch (err) {
    throw new TypeError(`Flag "--${name}": ${(err as Error).message}`);
  }
  if (ms < minMs) {
    throw new RangeError(`Flag "--${name}" must be at least ${minMs}ms, got "${text}"`);
  }
  return ms;
}

const SOURCE_NAMES = ["cri", "kubelet", "static"];

function bestEffort(text: string): string[] {
  const names = text.split(",").map((n) => n.trim()).filter((n) => n !== "");
  for (const name of names) {
    if (!SOURCE_NAMES.includes(name)) {
      throw new TypeError(
        `Flag "--source-best-effort" names unknown source "${name}": use ${
          SOURCE_NAMES.join(", ")
        }`,
      );
    }
  }
  return names;
}

function splitHostPort(
  text: string,
  flag: ServeFlag = "metrics-bind-address",
): { host: string; port: number } {
  const match = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(text);
  const port = match ? Number(match[2]) : NaN;
  if (!match || port > 65535) {
    throw new TypeError(`Cannot parse "--${flag}" value "${text}": use host:port`);
  }
  return { host: match[1]!.replace(/^\[|\]$/g, ""), port };
}

const DEFAULT_HISTORY_MS = 5 * 60_000;
const DEFAULT_HISTORY_EVENTS = 10_000;

/** `--watch-history`: `5m`, `10000` or `5m,10000`; the part left out keeps its default. */
function watchHistory(text: string): { ms: number; events: number } {
  let ms = DEFAULT_HISTORY_MS;
  let events = DEFAULT_HISTORY_EVENTS;
  const parts = text.split(",").map((p) => p.trim());
  if (parts.length > 2 || parts.some((p) => p === "")) {
    throw new TypeError(
      `Cannot parse "--watch-history" value "${text}": use a duration, a count or both (5m,10000)`,
    );
  }
  for (const part of parts) {
    if (/^\d+$/.test(part)) {
      events = Number(part);
      if (events < 1) throw new RangeError(`Flag "--watch-history" count must be at least 1`);
      continue;
    }
    try {
      ms = parseDuration(part);
    } catch (err) {
      throw new TypeError(`Flag "--watch-history": ${(err as Error).message}`);
    }
    if (ms < 1000) throw new RangeError(`Flag "--watch-history" duration must be at least 1s`);
  }
  return { ms, events };
}

function buildConfig(
  raw: Record<ServeFlag, string | boolean>,
  options: ParseConfigOptions,
): ServeConfig {
  const logLevel = str(raw, "log-level");
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    throw new TypeError(
      `Flag "--log-level" must be one of ${LOG_LEVELS.join(", ")}, got "${logLevel}"`,
    );
  }
  const socket = str(raw, "socket");
  if (!socket.startsWith("/")) {
    throw new TypeError(`Flag "--socket" must be an absolute path, got "${socket}"`);
  }
  const metrics = splitHostPort(str(raw, "metrics-bind-address"));
  const hostname = options.hostname ?? (() => Deno.hostname());
  const nodeName = str(raw, "hostname-override") || hostname().toLowerCase();
  const history = watchHistory(str(raw, "watch-history"));
  const httpBind = str(raw, "http-bind-address");
  if ((str(raw, "http-tls-cert-file") === "") !== (str(raw, "http-tls-private-key-file") === "")) {
    throw new TypeError(
      `Flags "--http-tls-cert-file" and "--http-tls-private-key-file" go together`,
    );
  }
  return Object.freeze({
    socket,
    socketGroup: str(raw, "socket-group"),
    metricsHost: metrics.host,
    metricsPort: metrics.port,
    nodeName,
    runtimeEndpoint: str(raw, "container-runtime-endpoint"),
    nodeIPs: str(raw, "node-ip").split(",").map((ip) => ip.trim()).filter((ip) => ip !== ""),
    runtimeRequestTimeoutMs: dur(raw, "runtime-request-timeout", 1),
    runtimeWaitTimeoutMs: dur(raw, "runtime-wait-timeout", 0),
    relistPeriodMs: dur(raw, "relist-period", 10),
    podManifestPath: str(raw, "pod-manifest-path"),
    fileCheckFrequencyMs: dur(raw, "file-check-frequency", 100),
    kubeletUrl: str(raw, "kubelet-url"),
    kubeletTokenFile: str(raw, "kubelet-token-file"),
    kubeletClientCert: str(raw, "kubelet-client-cert"),
    kubeletClientKey: str(raw, "kubelet-client-key"),
    kubeletCaFile: str(raw, "kubelet-ca-file"),
    kubeletInsecureSkipTlsVerify: raw["kubelet-insecure-skip-tls-verify"] === true,
    kubeletPollPeriodMs: dur(raw, "kubelet-poll-period", 100),
    bestEffortSources: bestEffort(str(raw, "source-best-effort")),
    bestEffortTimeoutMs: dur(raw, "source-best-effort-timeout", 0),
    relistThresholdMs: dur(raw, "relist-threshold", 1),
    rateLimitQps: num(raw, "rate-limit-qps", Number.MIN_VALUE),
    rateLimitBurst: num(raw, "rate-limit-burst", 1),
    watchQueueSize: num(raw, "watch-queue-size", 1),
    maxWatchers: num(raw, "max-watchers", 1),
    connectionRateLimitQps: num(raw, "connection-rate-limit-qps", Number.MIN_VALUE),
    connectionRateLimitBurst: num(raw, "connection-rate-limit-burst", 1),
    watchHistoryMs: history.ms,
    watchHistoryEvents: history.events,
    tombstoneTtlMs: dur(raw, "tombstone-ttl", 0),
    httpBind: httpBind === "" ? undefined : splitHostPort(httpBind, "http-bind-address"),
    httpTokenFile: str(raw, "http-token-file"),
    httpTlsCertFile: str(raw, "http-tls-cert-file"),
    httpTlsKeyFile: str(raw, "http-tls-private-key-file"),
    httpCertDir: str(raw, "http-cert-dir"),
    httpBookmarkPeriodMs: dur(raw, "http-watch-bookmark-period", 10),
    simulate: raw["simulate"] === true,
    simulatePods: num(raw, "simulate-pods", 0),
    simulateChurn: num(raw, "simulate-churn", 0),
    simulateSeed: num(raw, "simulate-seed", 0),
    simulateSyncDelayMs: dur(raw, "simulate-sync-delay", 0),
    logLevel: logLevel as LogLevel,
    printConfig: raw["print-config"] === true,
    raw: Object.freeze({ ...raw }),
  });
}

/**
 * Renders `serve --help`: every flag with its default.
 *
 * @returns The help text.
 */
export function serveHelp(): string {
  const lines = ["Usage: pods-api serve [flags]", "", "Flags:"];
  for (const [name, flag] of Object.entries(SERVE_FLAGS)) {
    const value = flag.type === "boolean" ? "" : ` ${flag.type}`;
    const def = flag.default === "" ? "" : ` (default ${JSON.stringify(flag.default)})`;
    lines.push(`  --${name}${value}`, `        ${flag.help}${def}`);
  }
  return lines.join("\n");
}
