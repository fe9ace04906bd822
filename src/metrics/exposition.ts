/**
 * Prometheus' text exposition format 0.0.4: how names, help, label values
 * and numbers are written, and the {@linkcode Registry} that writes every
 * metric family registered in it. The instruments themselves (counters,
 * gauges, histograms) are in `instruments.ts`.
 *
 * A scrape is: for each family, in registration order, `# HELP name text`,
 * `# TYPE name type`, then its samples (`name{a="x",b="y"} value`), families
 * separated by an empty line (the parser ignores it), ending with a newline.
 *
 * @module
 */

/** The content type of the exposition. */
export const CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** What a metric name must look like. */
export const METRIC_NAME_REGEXP = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

/** What a label name must look like (names starting `__` are reserved to Prometheus). */
export const LABEL_NAME_REGEXP = /^(?!__)[a-zA-Z_][a-zA-Z0-9_]*$/;

/** The family types this daemon exposes. */
export type MetricType = "counter" | "gauge" | "histogram";

/** One metric family as a {@linkcode Registry} sees it. */
export interface MetricFamily {
  readonly name: string;
  /**
   * Reads any figure computed at scrape time, then writes the family.
   *
   * @returns Its `# HELP` and `# TYPE` lines and samples, without a final newline.
   */
  expose(): string;
}

/**
 * Escapes a `# HELP` text: backslash and line feed.
 *
 * @example Usage
 * ```ts
 * import { escapeHelp } from "./exposition.ts";
 * escapeHelp("a\\b\nc"); // "a\\\\b\\nc"
 * ```
 *
 * @param text The help text.
 * @returns The text as written after `# HELP name `.
 */
export function escapeHelp(text: string): string {
  return text.replaceAll("\\", "\\\\").replaceAll("\n", "\\n");
}

/**
 * Escapes a label value: backslash, double quote and line feed.
 *
 * @param value The value.
 * @returns The value as written between the quotes.
 */
export function escapeLabelValue(value: string): string {
  return escapeHelp(value).replaceAll('"', '\\"');
}

/**
 * Writes a sample value (or a bucket bound) the way Prometheus parses it:
 * `NaN`, `+Inf`, `-Inf`, integers in full (never `1e+21`), other numbers in
 * JavaScript's shortest round-trip form (`0.25`, `1.5e-7`).
 *
 * @param value The value.
 * @returns Its text.
 */
export function formatValue(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Infinity) return "+Inf";
  if (value === -Infinity) return "-Inf";
  if (Number.isInteger(value) && Math.abs(value) >= 1e21) return BigInt(value).toString();
  return String(value);
}

/**
 * Writes label pairs without the braces: `a="x",b="y"`.
 *
 * @param names Label names, in the order to write them.
 * @param values Their values, by name.
 * @returns The pairs joined by commas; empty for no labels.
 */
export function formatLabelPairs(
  names: readonly string[],
  values: Readonly<Record<string, string | number>>,
): string {
  return names.map((name) => `${name}="${escapeLabelValue(String(values[name]))}"`).join(",");
}

/**
 * The `# HELP` and `# TYPE` lines of a family.
 *
 * @param name Metric name.
 * @param help Help text (escaped here).
 * @param type Family type.
 * @returns Two lines, the second without a final newline.
 */
export function familyHeader(name: string, help: string, type: MetricType): string {
  return `# HELP ${name} ${escapeHelp(help)}\n# TYPE ${name} ${type}`;
}

/** Metric families to expose together, in the order they were registered. */
export class Registry {
  /** The exposition's content type. */
  readonly contentType: string = CONTENT_TYPE;
  readonly #families = new Map<string, MetricFamily>();

  /**
   * Adds a family (instruments do this when given `registers`).
   *
   * @param family The family.
   * @throws {Error} When another family already has its name.
   */
  registerMetric(family: MetricFamily): void {
    const known = this.#families.get(family.name);
    if (known !== undefined && known !== family) {
      throw new Error(`A metric named "${family.name}" is already registered`);
    }
    this.#families.set(family.name, family);
  }

  /**
   * Writes every family.
   *
   * @returns The text exposition, ending with a newline.
   */
  expose(): string {
    const parts: string[] = [];
    for (const family of this.#families.values()) parts.push(family.expose());
    return `${parts.join("\n\n")}\n`;
  }
}
