/**
 * `pods-api serve` configuration: flags, an optional config file under them,
 * defaults under both. The only reader of command-line arguments for `serve`.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { parse as parseYaml } from "yaml";
import { isJsonObject } from "./model/json.ts";
import { parseDuration } from "./duration.ts";
import {
  type FlagSpec,
  type KeyedFlagValues,
  SERVE_FLAGS,
  type ServeFlag,
} from "./config_flags.ts";

/**
 * The effective configuration of `serve`: one property per flag that declares
 * a `key` in `config_flags.ts` (typed from the declaration), plus the flags
 * with a shape of their own.
 */
export interface ServeConfig extends KeyedFlagValues {
  /** `--metrics-bind-address`: host. */
  readonly metricsHost: string;
  /** `--metrics-bind-address`: port (0 picks one). */
  readonly metricsPort: number;
  /** `--hostname-override`, else the host name, lower case. */
  readonly nodeName: string;
  /** `--watch-history`: how long changes stay resumable, ms. */
  readonly watchHistoryMs: number;
  /** `--watch-history`: how many changes stay resumable. */
  readonly watchHistoryEvents: number;
  /** The HTTP API's address; `undefined` when `--http-bind-address` is empty. */
  readonly httpBind: { readonly host: string; readonly port: number } | undefined;
  /** Every flag's value as typed (flags over the config file over defaults), for `--print-config`. */
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
    let text: string;
    try {
      text = read(configPath);
    } catch (err) {
      throw new TypeError(`Cannot read config file "${configPath}": ${osCause(err)}`);
    }
    Object.assign(raw, readConfigFile(configPath, text));
  }
  for (const [name, value] of Object.entries(fromFlags)) if (value !== undefined) raw[name] = value;
  return buildConfig(raw as Record<ServeFlag, string | boolean>, options);
}

/** Flags that make no sense in the config file (nor in `--print-config`'s output). */
const NOT_IN_FILE: ReadonlySet<string> = new Set<ServeFlag>(["config", "print-config"]);

/**
 * An OS error's cause without Deno's decorations: `No such file or directory
 * (os error 2): readfile '/x'` reads `no such file or directory`.
 */
function osCause(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const cause = message
    .replace(/, run again with.*$/s, "")
    .replace(/: [a-z_ ]+ '[^']*'$/, "")
    .replace(/ \(os error \d+\)/, "")
    .trim();
  return cause.charAt(0).toLowerCase() + cause.slice(1);
}

/**
 * Names the flag and the address when a listener cannot be bound, instead of
 * Deno's bare `AddrInUse: Address already in use (os error 98)`.
 *
 * @example Usage
 * ```ts
 * import { listenError } from "./config.ts";
 * const err = listenError(new Deno.errors.AddrInUse("Address already in use (os error 98)"),
 *   "metrics-bind-address", "127.0.0.1:9469");
 * console.assert(err instanceof Error && err.message.includes("--metrics-bind-address"));
 * ```
 *
 * @param err What binding threw.
 * @param flag The flag that set the address.
 * @param address The address, as `host:port` or a socket path.
 * @returns An error naming both for the errors of binding; `err` itself for any other.
 */
export function listenError(err: unknown, flag: ServeFlag, address: string): unknown {
  const binding = err instanceof Deno.errors.AddrInUse ||
    err instanceof Deno.errors.AddrNotAvailable || err instanceof Deno.errors.PermissionDenied;
  if (!binding) return err;
  return new Error(`Cannot listen on ${address} (--${flag}): ${osCause(err)}`, { cause: err });
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
    if (!(key in SERVE_FLAGS) || NOT_IN_FILE.has(key)) {
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

function num(raw: Record<ServeFlag, string | boolean>, name: ServeFlag): number {
  const flag: FlagSpec = SERVE_FLAGS[name];
  const text = str(raw, name);
  const value = Number(text);
  if (text.trim() === "" || !Number.isFinite(value)) {
    throw new TypeError(`Cannot parse "--${name}" value "${text}": not a number`);
  }
  if (flag.type === "integer" && !Number.isInteger(value)) {
    throw new TypeError(`Cannot parse "--${name}" value "${text}": not an integer`);
  }
  if (typeof flag.min === "number" && value < flag.min) {
    throw new RangeError(`Flag "--${name}" must be at least ${flag.min}, got "${text}"`);
  }
  if (flag.above !== undefined && !(value > flag.above)) {
    throw new RangeError(`Flag "--${name}" must be greater than ${flag.above}, got "${text}"`);
  }
  return value;
}

function dur(raw: Record<ServeFlag, string | boolean>, name: ServeFlag): number {
  const flag: FlagSpec = SERVE_FLAGS[name];
  const text = str(raw, name);
  let ms: number;
  try {
    ms = parseDuration(text);
  } catch (err) {
    throw new TypeError(`Flag "--${name}": ${(err as Error).message}`);
  }
  if (typeof flag.min === "string" && ms < parseDuration(flag.min)) {
    throw new RangeError(`Flag "--${name}" must be at least ${flag.min}, got "${text}"`);
  }
  return ms;
}

function choice(name: ServeFlag, value: string): string {
  const choices: readonly string[] | undefined = (SERVE_FLAGS[name] as FlagSpec).choices;
  if (choices !== undefined && !choices.includes(value)) {
    throw new TypeError(`Flag "--${name}" must be one of ${choices.join(", ")}, got "${value}"`);
  }
  return value;
}

/** One flag's value, parsed and checked as its declaration says. */
function flagValue(raw: Record<ServeFlag, string | boolean>, name: ServeFlag): unknown {
  const flag: FlagSpec = SERVE_FLAGS[name];
  if (flag.type === "boolean") return raw[name] === true;
  if (flag.list) {
    const items = str(raw, name).split(",").map((item) => item.trim()).filter((i) => i !== "");
    return [...new Set(items)].map((item) => choice(name, item));
  }
  if (flag.type === "duration") return dur(raw, name);
  if (flag.type === "integer" || flag.type === "number") return num(raw, name);
  return choice(name, str(raw, name));
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

/** `--watch-history`: `5m`, `10000` or `5m,10000`; the part left out keeps its declared default. */
function watchHistory(text: string): { ms: number; events: number } {
  const given = historyParts(text);
  const declared = historyParts(SERVE_FLAGS["watch-history"].default);
  return { ms: given.ms ?? declared.ms ?? 0, events: given.events ?? declared.events ?? 0 };
}

function historyParts(text: string): { ms?: number; events?: number } {
  const out: { ms?: number; events?: number } = {};
  const parts = text.split(",").map((p) => p.trim());
  if (parts.length > 2 || parts.some((p) => p === "")) {
    throw new TypeError(
      `Cannot parse "--watch-history" value "${text}": use a duration, a count or both (5m,10000)`,
    );
  }
  for (const part of parts) {
    if (/^\d+$/.test(part)) {
      out.events = Number(part);
      if (out.events < 1) throw new RangeError(`Flag "--watch-history" count must be at least 1`);
      continue;
    }
    try {
      out.ms = parseDuration(part);
    } catch (err) {
      throw new TypeError(`Flag "--watch-history": ${(err as Error).message}`);
    }
    if (out.ms < 1000) throw new RangeError(`Flag "--watch-history" duration must be at least 1s`);
  }
  return out;
}

function buildConfig(
  raw: Record<ServeFlag, string | boolean>,
  options: ParseConfigOptions,
): ServeConfig {
  const keyed: Record<string, unknown> = {};
  for (const [name, flag] of Object.entries(SERVE_FLAGS) as [ServeFlag, FlagSpec][]) {
    if (flag.key !== undefined) keyed[flag.key] = flagValue(raw, name);
  }
  const flags = keyed as unknown as KeyedFlagValues;
  if (!flags.socket.startsWith("/")) {
    throw new TypeError(`Flag "--socket" must be an absolute path, got "${flags.socket}"`);
  }
  if ((flags.httpTlsCertFile === "") !== (flags.httpTlsKeyFile === "")) {
    throw new TypeError(
      `Flags "--http-tls-cert-file" and "--http-tls-private-key-file" go together`,
    );
  }
  const metrics = splitHostPort(str(raw, "metrics-bind-address"));
  const hostname = options.hostname ?? (() => Deno.hostname());
  const history = watchHistory(str(raw, "watch-history"));
  const httpBind = str(raw, "http-bind-address");
  return Object.freeze({
    ...flags,
    metricsHost: metrics.host,
    metricsPort: metrics.port,
    nodeName: str(raw, "hostname-override") || hostname().toLowerCase(),
    watchHistoryMs: history.ms,
    watchHistoryEvents: history.events,
    httpBind: httpBind === "" ? undefined : splitHostPort(httpBind, "http-bind-address"),
    raw: Object.freeze({ ...raw }),
  });
}

/**
 * What `serve --print-config` prints: every value under the name `--config`
 * accepts (the flag's), numbers as numbers, so the output is a config file
 * that gives the same configuration back.
 *
 * @param config A parsed configuration.
 * @returns The config file's keys and values, in flag order.
 */
export function printableConfig(config: ServeConfig): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const [name, flag] of Object.entries(SERVE_FLAGS) as [ServeFlag, FlagSpec][]) {
    if (NOT_IN_FILE.has(name)) continue;
    const value = config.raw[name];
    const numeric = flag.type === "integer" || flag.type === "number";
    out[name] = typeof value === "string" && numeric ? Number(value) : value;
  }
  return out;
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
