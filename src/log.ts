/**
 * A small structured logger: one JSON object per line on stderr, with time,
 * level, component and message. Injected everywhere; nothing else in the
 * daemon writes to the console.
 *
 * @module
 */

import type { Clock } from "./clock.ts";

/** Log levels, least to most severe. */
export const LOG_LEVELS = ["debug", "info", "warn", "error"] as const;

/** One of {@linkcode LOG_LEVELS}. */
export type LogLevel = typeof LOG_LEVELS[number];

/** Extra structured fields of a log line. */
export type LogFields = Record<string, unknown>;

/** The logger every component receives. */
export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** @returns A logger whose lines carry `component`. */
  child(component: string): Logger;
}

/** Options of {@linkcode createLogger}. */
export interface LoggerOptions {
  /** Lines below this level are dropped. @default {"info"} */
  level?: LogLevel;
  /** @default {"main"} */
  component?: string;
  /** Where lines go. @default {stderr} */
  write?: (line: string) => void;
  clock?: Clock;
}

const ENCODER = new TextEncoder();

function writeStderr(line: string): void {
  Deno.stderr.writeSync(ENCODER.encode(line + "\n"));
}

function fieldValue(value: unknown): unknown {
  if (value instanceof Error) return `${value.name}: ${value.message}`;
  if (typeof value === "bigint") return value.toString();
  return value;
}

/**
 * Creates a JSON-lines logger.
 *
 * @example Usage
 * ```ts
 * import { createLogger } from "./log.ts";
 * const log = createLogger({ level: "info" }).child("relist");
 * log.info("relist done", { pods: 3 });
 * ```
 *
 * @param options Level, component, sink and clock.
 * @returns The logger.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const threshold = LOG_LEVELS.indexOf(options.level ?? "info");
  const write = options.write ?? writeStderr;
  const now = options.clock ? () => options.clock!.now() : () => Date.now();
  function make(component: string): Logger {
    function emit(level: LogLevel, msg: string, fields?: LogFields): void {
      if (LOG_LEVELS.indexOf(level) < threshold) return;
      const line: Record<string, unknown> = {
        ts: new Date(now()).toISOString(),
        level,
        component,
        msg,
      };
      for (const [key, value] of Object.entries(fields ?? {})) line[key] = fieldValue(value);
      write(JSON.stringify(line));
    }
    return {
      debug: (msg, fields) => emit("debug", msg, fields),
      info: (msg, fields) => emit("info", msg, fields),
      warn: (msg, fields) => emit("warn", msg, fields),
      error: (msg, fields) => emit("error", msg, fields),
      child: (name) => make(name),
    };
  }
  return make(options.component ?? "main");
}

/** A logger that drops everything: the default in tests. */
export const silentLogger: Logger = createLogger({ write: () => {} });
