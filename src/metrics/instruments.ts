/**
 * Counters, gauges and histograms with labels, exposed by a
 * {@linkcode Registry} (`exposition.ts`). Each distinct set of label values
 * is a child, created on first use and kept (the daemon's label values come
 * from small fixed sets). A metric without labels has its one child from the
 * start, so it is exposed as 0 before anything counts; a metric with labels
 * exposes only its `# HELP` and `# TYPE` lines until then.
 *
 * Every label must be given on every call, and no other: a wrong label set
 * throws, as a wrong metric name or label name does at construction.
 *
 * @module
 */

import {
  familyHeader,
  formatLabelPairs,
  formatValue,
  LABEL_NAME_REGEXP,
  METRIC_NAME_REGEXP,
  type MetricFamily,
  type MetricType,
  type Registry,
} from "./exposition.ts";

/** Values of a metric's labels, by label name. */
export type LabelValues<L extends string> = Readonly<Record<L, string | number>>;

/** What a metric is made from. */
export interface MetricConfiguration<L extends string, Self> {
  /** Metric name (`[a-zA-Z_:][a-zA-Z0-9_:]*`). */
  name: string;
  /** One line saying what it counts. */
  help: string;
  /** Label names (`[a-zA-Z_][a-zA-Z0-9_]*`, not starting `__`), in the order they are written. */
  labelNames?: readonly L[];
  /** Registries that expose it. @default {none} */
  registers?: readonly Registry[];
  /** Called before each scrape (and {@linkcode Metric.get}): sets figures read at scrape time. */
  collect?: (this: Self) => void;
}

/** One sample of {@linkcode MetricSnapshot}. */
export interface MetricSample {
  readonly value: number;
  readonly labels: Readonly<Record<string, string | number>>;
  /** The sample's own name when it differs from the family's (`_bucket`, `_sum`, `_count`). */
  readonly metricName?: string;
}

/** A metric's samples as data (what tests read). */
export interface MetricSnapshot {
  readonly name: string;
  readonly help: string;
  readonly type: MetricType;
  readonly values: readonly MetricSample[];
}

/** One set of label values and its state. */
interface Child<S> {
  readonly labels: LabelValues<string>;
  /** `a="x",b="y"`, written once. */
  readonly pairs: string;
  readonly state: S;
}

/** What counters, gauges and histograms share: name, labels, children, registration. */
abstract class Metric<L extends string, S> implements MetricFamily {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly L[];
  abstract readonly type: MetricType;
  readonly #children = new Map<string, Child<S>>();
  readonly #collect: (() => void) | undefined;

  constructor(config: MetricConfiguration<L, unknown>, reserved: readonly string[] = []) {
    if (!METRIC_NAME_REGEXP.test(config.name)) {
      throw new Error(`Invalid metric name "${config.name}"`);
    }
    if (config.help === "") throw new Error(`Metric "${config.name}" has no help text`);
    const labelNames = config.labelNames ?? [];
    for (const label of labelNames) {
      if (!LABEL_NAME_REGEXP.test(label) || reserved.includes(label)) {
        throw new Error(`Invalid label name "${label}" for metric "${config.name}"`);
      }
    }
    if (new Set(labelNames).size !== labelNames.length) {
      throw new Error(`Metric "${config.name}" repeats a label name`);
    }
    this.name = config.name;
    this.help = config.help;
    this.labelNames = [...labelNames];
    this.#collect = config.collect?.bind(this);
    for (const registry of config.registers ?? []) registry.registerMetric(this);
  }

  /** A fresh child state. */
  protected abstract initial(): S;

  /** Samples of one child, written as lines. */
  protected abstract writeChild(child: Child<S>, out: string[]): void;

  /** Samples of one child, as data. */
  protected abstract sampleChild(child: Child<S>, out: MetricSample[]): void;

  /** Creates the child of a metric without labels (call once the subclass is set up). */
  protected seed(): void {
    if (this.labelNames.length === 0) this.state(undefined);
  }

  /**
   * The state of a set of label values, created on first use.
   *
   * @param labels Values of every label (ignored, and may be absent, without labels).
   * @returns Its state.
   * @throws {Error} When a label is missing or unknown.
   */
  protected state(labels: LabelValues<L> | undefined): S {
    const names = this.labelNames;
    if (names.length === 0) {
      if (labels !== undefined && Object.keys(labels).length > 0) this.#badLabels(labels);
      return this.#child("", {}).state;
    }
    if (labels === undefined) return this.#badLabels({});
    let key = "";
    for (const name of names) {
      const value = labels[name];
      if (value === undefined) this.#badLabels(labels);
      const text = String(value);
      key += `${text.length}:${text}`;
    }
    let given = 0;
    for (const _ in labels) given++;
    if (given !== names.length) this.#badLabels(labels);
    return (this.#children.get(key) ?? this.#child(key, labels)).state;
  }

  #child(key: string, labels: LabelValues<string>): Child<S> {
    let child = this.#children.get(key);
    if (child === undefined) {
      const own = Object.fromEntries(this.labelNames.map((n) => [n, labels[n]!]));
      child = { labels: own, pairs: formatLabelPairs(this.labelNames, own), state: this.initial() };
      this.#children.set(key, child);
    }
    return child;
  }

  #badLabels(labels: object): never {
    throw new Error(
      `Metric "${this.name}" takes labels [${this.labelNames.join(", ")}], got [${
        Object.keys(labels).join(", ")
      }]`,
    );
  }

  /**
   * Runs `collect` (figures read at scrape time), then writes the family.
   *
   * @returns `# HELP`, `# TYPE` and sample lines, without a final newline.
   */
  expose(): string {
    this.#collect?.();
    const out = [familyHeader(this.name, this.help, this.type)];
    for (const child of this.#children.values()) this.writeChild(child, out);
    return out.join("\n");
  }

  /**
   * Runs `collect`, then returns the samples as data.
   *
   * @returns Name, help, type and samples.
   */
  get(): Promise<MetricSnapshot> {
    return new Promise((resolve) => {
      this.#collect?.();
      const values: MetricSample[] = [];
      for (const child of this.#children.values()) this.sampleChild(child, values);
      resolve({ name: this.name, help: this.help, type: this.type, values });
    });
  }
}

/** A value cell of a counter or gauge. */
interface Cell {
  value: number;
}

/** Counters and gauges: one value per child. */
abstract class ValueMetric<L extends string> extends Metric<L, Cell> {
  protected initial(): Cell {
    return { value: 0 };
  }

  protected writeChild(child: Child<Cell>, out: string[]): void {
    const labels = child.pairs === "" ? "" : `{${child.pairs}}`;
    out.push(`${this.name}${labels} ${formatValue(child.state.value)}`);
  }

  protected sampleChild(child: Child<Cell>, out: MetricSample[]): void {
    out.push({ value: child.state.value, labels: child.labels });
  }
}

/** Splits `(labels?, value?)` arguments. */
function splitArgs<L extends string>(
  labelsOrValue: LabelValues<L> | number | undefined,
  value: number | undefined,
): [LabelValues<L> | undefined, number | undefined] {
  return typeof labelsOrValue === "object" ? [labelsOrValue, value] : [undefined, labelsOrValue];
}

/** A counter: a value that only goes up. */
export class Counter<L extends string = never> extends ValueMetric<L> {
  readonly type = "counter";

  /** @param config Name, help, labels, registries, scrape-time `collect`. */
  constructor(config: MetricConfiguration<L, Counter<L>>) {
    super(config as MetricConfiguration<L, unknown>);
    this.seed();
  }

  /**
   * Adds to the counter.
   *
   * @param value How much (finite, not negative). @default {1}
   * @throws {Error} When the value is negative or not finite.
   */
  inc(value?: number): void;
  /**
   * Adds to one child.
   *
   * @param labels Values of every label.
   * @param value How much (finite, not negative). @default {1}
   * @throws {Error} When a label is wrong, or the value negative or not finite.
   */
  inc(labels: LabelValues<L>, value?: number): void;
  inc(labelsOrValue?: LabelValues<L> | number, value?: number): void {
    const [labels, amount = 1] = splitArgs(labelsOrValue, value);
    this.#add(this.state(labels), amount);
  }

  /**
   * One child, to count on without naming its labels each time: its labels
   * are looked up once, here (a hot path's count then builds no key).
   *
   * @param labels Values of every label.
   * @returns Its `inc`.
   * @throws {Error} When a label is wrong.
   */
  labels(labels: LabelValues<L>): { inc(value?: number): void } {
    const cell = this.state(labels);
    return { inc: (value = 1) => this.#add(cell, value) };
  }

  #add(cell: Cell, value: number): void {
    if (!Number.isFinite(value) || value < 0) {
      throw new Error(`Counter "${this.name}" cannot be increased by ${value}`);
    }
    cell.value += value;
  }
}

/** A gauge: a value set, or moved up and down. */
export class Gauge<L extends string = never> extends ValueMetric<L> {
  readonly type = "gauge";

  /** @param config Name, help, labels, registries, scrape-time `collect`. */
  constructor(config: MetricConfiguration<L, Gauge<L>>) {
    super(config as MetricConfiguration<L, unknown>);
    this.seed();
  }

  /**
   * Sets the gauge.
   *
   * @param value The value (`NaN` and infinities are written as such).
   */
  set(value: number): void;
  /**
   * Sets one child.
   *
   * @param labels Values of every label.
   * @param value The value.
   */
  set(labels: LabelValues<L>, value: number): void;
  set(labelsOrValue: LabelValues<L> | number, value?: number): void {
    const [labels, setTo] = splitArgs(labelsOrValue, value);
    if (typeof setTo !== "number") throw new TypeError(`Gauge "${this.name}" set to ${setTo}`);
    this.state(labels).value = setTo;
  }

  /**
   * Adds to the gauge (or one child).
   *
   * @param labelsOrValue Values of every label, or the amount.
   * @param value The amount. @default {1}
   */
  inc(labelsOrValue?: LabelValues<L> | number, value?: number): void {
    const [labels, amount = 1] = splitArgs(labelsOrValue, value);
    this.state(labels).value += amount;
  }

  /**
   * Subtracts from the gauge (or one child).
   *
   * @param labelsOrValue Values of every label, or the amount.
   * @param value The amount. @default {1}
   */
  dec(labelsOrValue?: LabelValues<L> | number, value?: number): void {
    const [labels, amount = 1] = splitArgs(labelsOrValue, value);
    this.state(labels).value -= amount;
  }

  /**
   * One child, to move without naming its labels each time.
   *
   * @param labels Values of every label.
   * @returns Its `set`, `inc` and `dec`.
   */
  labels(labels: LabelValues<L>): {
    set(value: number): void;
    inc(value?: number): void;
    dec(value?: number): void;
  } {
    const cell = this.state(labels);
    return {
      set: (value) => cell.value = value,
      inc: (value = 1) => cell.value += value,
      dec: (value = 1) => cell.value -= value,
    };
  }
}

/** Observations of one histogram child: per-bucket counts (not cumulative), sum, count. */
interface Buckets {
  readonly counts: Float64Array;
  sum: number;
  count: number;
}

/** Configuration of a {@linkcode Histogram}. */
export interface HistogramConfiguration<L extends string>
  extends MetricConfiguration<L, Histogram<L>> {
  /** Upper bounds, finite and increasing (`+Inf` is implied). */
  buckets: readonly number[];
}

/** A histogram: observations counted into buckets by upper bound, with their sum and count. */
export class Histogram<L extends string = never> extends Metric<L, Buckets> {
  readonly type = "histogram";
  readonly #bounds: readonly number[];
  /** The `le` label of each bucket, `+Inf` last. */
  readonly #le: readonly string[];

  /** @param config Name, help, labels (not `le`), buckets, registries. */
  constructor(config: HistogramConfiguration<L>) {
    super(config as MetricConfiguration<L, unknown>, ["le"]);
    const bounds = config.buckets;
    for (let i = 0; i < bounds.length; i++) {
      if (!Number.isFinite(bounds[i]) || (i > 0 && bounds[i]! <= bounds[i - 1]!)) {
        throw new Error(`Histogram "${config.name}" needs finite, increasing buckets`);
      }
    }
    this.#bounds = [...bounds];
    this.#le = [...bounds.map(formatValue), "+Inf"];
    this.seed();
  }

  protected initial(): Buckets {
    return { counts: new Float64Array(this.#bounds.length + 1), sum: 0, count: 0 };
  }

  /**
   * Records one observation.
   *
   * @param value The value (finite).
   * @throws {TypeError} When it is not finite.
   */
  observe(value: number): void;
  /**
   * Records one observation in one child.
   *
   * @param labels Values of every label.
   * @param value The value (finite).
   * @throws {Error} When a label is wrong or the value not finite.
   */
  observe(labels: LabelValues<L>, value: number): void;
  observe(labelsOrValue: LabelValues<L> | number, value?: number): void {
    const [labels, observed] = splitArgs(labelsOrValue, value);
    this.#record(this.state(labels), observed);
  }

  /**
   * One child, to observe without naming its labels each time: its labels
   * are looked up once, here.
   *
   * @param labels Values of every label.
   * @returns Its `observe`.
   * @throws {Error} When a label is wrong.
   */
  labels(labels: LabelValues<L>): { observe(value: number): void } {
    const buckets = this.state(labels);
    return { observe: (value) => this.#record(buckets, value) };
  }

  #record(buckets: Buckets, value: number | undefined): void {
    if (value === undefined || !Number.isFinite(value)) {
      throw new TypeError(`Histogram "${this.name}" cannot observe ${value}`);
    }
    const bounds = this.#bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    buckets.counts[i]!++;
    buckets.sum += value;
    buckets.count++;
  }

  protected writeChild(child: Child<Buckets>, out: string[]): void {
    const { counts, sum, count } = child.state;
    const prefix = child.pairs === "" ? "" : `${child.pairs},`;
    const labels = child.pairs === "" ? "" : `{${child.pairs}}`;
    let cumulative = 0;
    for (let i = 0; i < counts.length; i++) {
      cumulative += counts[i]!;
      out.push(`${this.name}_bucket{${prefix}le="${this.#le[i]}"} ${formatValue(cumulative)}`);
    }
    out.push(`${this.name}_sum${labels} ${formatValue(sum)}`);
    out.push(`${this.name}_count${labels} ${formatValue(count)}`);
  }

  protected sampleChild(child: Child<Buckets>, out: MetricSample[]): void {
    const { counts, sum, count } = child.state;
    let cumulative = 0;
    for (let i = 0; i < counts.length; i++) {
      cumulative += counts[i]!;
      out.push({
        value: cumulative,
        labels: { ...child.labels, le: this.#le[i]! },
        metricName: `${this.name}_bucket`,
      });
    }
    out.push({ value: sum, labels: child.labels, metricName: `${this.name}_sum` });
    out.push({ value: count, labels: child.labels, metricName: `${this.name}_count` });
  }
}
