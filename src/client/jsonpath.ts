/**
 * kubectl's JSONPath templates (`-o jsonpath=...`, `--sort-by`): text with
 * `{...}` actions holding paths (`.a.b`, `[0]`, `[*]`, `['k']`, `..name`,
 * filters `[?(@.a=="x")]`), `{range ...}...{end}` and quoted literals
 * (`{"\n"}`). Results of one action are joined by spaces, as kubectl does.
 *
 * @module
 */

import { isJsonObject } from "../model/json.ts";

/** A template that cannot be parsed; the message names the bad part. */
export class JsonPathError extends SyntaxError {
  /**
   * @param message What is wrong.
   */
  constructor(message: string) {
    super(message);
    this.name = "JsonPathError";
  }
}

type Step =
  | { kind: "field"; name: string }
  | { kind: "index"; index: number }
  | { kind: "slice"; start: number | undefined; end: number | undefined }
  | { kind: "wildcard" }
  | { kind: "recursive"; name: string }
  | { kind: "filter"; path: Step[]; op: string | undefined; value: unknown };

type Node =
  | { kind: "text"; text: string }
  | { kind: "path"; steps: Step[] }
  | { kind: "range"; steps: Step[]; body: Node[] };

/**
 * Parses a path such as `.items[*].metadata.name`.
 *
 * @param expr The path, with or without `{}`.
 * @returns The steps.
 * @throws {JsonPathError} For a malformed path.
 */
function parsePath(expr: string): Step[] {
  const steps: Step[] = [];
  let i = 0;
  const s = expr.trim();
  if (s.startsWith("$")) i = 1;
  if (s.startsWith("@")) i = 1;
  while (i < s.length) {
    const c = s[i]!;
    if (c === ".") {
      if (s[i + 1] === ".") {
        const m = /^[A-Za-z0-9_\-$*]+/.exec(s.slice(i + 2));
        if (m === null) throw new JsonPathError(`Cannot parse JSONPath "${expr}" after ".."`);
        steps.push({ kind: "recursive", name: m[0] });
        i += 2 + m[0].length;
        continue;
      }
      const m = /^[A-Za-z0-9_\-$/]*/.exec(s.slice(i + 1))!;
      if (m[0] === "") {
        if (i + 1 >= s.length) break;
        if (s[i + 1] === "*") {
          steps.push({ kind: "wildcard" });
          i += 2;
          continue;
        }
        if (s[i + 1] === "[") {
          i++;
          continue;
        }
        throw new JsonPathError(`Cannot parse JSONPath "${expr}" at "${s.slice(i)}"`);
      }
      steps.push({ kind: "field", name: m[0] });
      i += 1 + m[0].length;
    } else if (c === "[") {
      const close = findClose(s, i);
      const inner = s.slice(i + 1, close).trim();
      i = close + 1;
      if (inner === "*") steps.push({ kind: "wildcard" });
      else if (/^-?\d+$/.test(inner)) steps.push({ kind: "index", index: Number(inner) });
      else if (/^-?\d*:-?\d*$/.test(inner)) {
        const [a, b] = inner.split(":");
        steps.push({
          kind: "slice",
          start: a === "" ? undefined : Number(a),
          end: b === "" ? undefined : Number(b),
        });
      } else if (/^'.*'$|^".*"$/.test(inner)) {
        steps.push({ kind: "field", name: inner.slice(1, -1) });
      } else if (inner.startsWith("?(") && inner.endsWith(")")) {
        steps.push(parseFilter(inner.slice(2, -1), expr));
      } else throw new JsonPathError(`Cannot parse JSONPath "${expr}" at "[${inner}]"`);
    } else if (/[A-Za-z_]/.test(c) && steps.length === 0) {
      const m = /^[A-Za-z0-9_\-$]+/.exec(s.slice(i))!;
      steps.push({ kind: "field", name: m[0] });
      i += m[0].length;
    } else {
      throw new JsonPathError(`Cannot parse JSONPath "${expr}" at "${s.slice(i)}"`);
    }
  }
  return steps;
}

function findClose(s: string, open: number): number {
  let depth = 0;
  let quote: string | undefined;
  for (let i = open; i < s.length; i++) {
    const c = s[i]!;
    if (quote !== undefined) {
      if (c === quote) quote = undefined;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === "[" || c === "(") depth++;
    else if (c === "]" || c === ")") {
      depth--;
      if (depth === 0) return i;
    }
  }
  throw new JsonPathError(`Cannot parse JSONPath "${s}": unclosed "["`);
}

function parseFilter(inner: string, expr: string): Step {
  const m = /^\s*(@[^=!<>\s]*)\s*(==|!=|<=|>=|<|>)?\s*(.*?)\s*$/.exec(inner);
  if (m === null) throw new JsonPathError(`Cannot parse JSONPath filter "${inner}" in "${expr}"`);
  const path = parsePath(m[1]!);
  if (m[2] === undefined) {
    if (m[3] !== "") {
      throw new JsonPathError(`Cannot parse JSONPath filter "${inner}" in "${expr}"`);
    }
    return { kind: "filter", path, op: undefined, value: undefined };
  }
  const raw = m[3]!;
  let value: unknown;
  if (/^'.*'$|^".*"$/.test(raw)) value = raw.slice(1, -1);
  else if (raw === "true" || raw === "false") value = raw === "true";
  else if (raw !== "" && !Number.isNaN(Number(raw))) value = Number(raw);
  else throw new JsonPathError(`Cannot parse JSONPath filter value "${raw}" in "${expr}"`);
  return { kind: "filter", path, op: m[2], value };
}

function parseTemplate(template: string): Node[] {
  const root: Node[] = [];
  const stack: Node[][] = [root];
  let i = 0;
  while (i < template.length) {
    const open = template.indexOf("{", i);
    if (open < 0) {
      stack.at(-1)!.push({ kind: "text", text: template.slice(i) });
      break;
    }
    if (open > i) stack.at(-1)!.push({ kind: "text", text: template.slice(i, open) });
    const close = closeBrace(template, open);
    const action = template.slice(open + 1, close).trim();
    i = close + 1;
    if (action.startsWith("range ")) {
      const node: Node = { kind: "range", steps: parsePath(action.slice(6)), body: [] };
      stack.at(-1)!.push(node);
      stack.push(node.body);
    } else if (action === "end") {
      if (stack.length === 1) {
        throw new JsonPathError(`Cannot parse JSONPath "${template}": {end} without {range}`);
      }
      stack.pop();
    } else if (/^".*"$|^'.*'$/s.test(action)) {
      stack.at(-1)!.push({ kind: "text", text: unescape(action.slice(1, -1)) });
    } else {
      stack.at(-1)!.push({ kind: "path", steps: parsePath(action) });
    }
  }
  if (stack.length > 1) {
    throw new JsonPathError(`Cannot parse JSONPath "${template}": {range} without {end}`);
  }
  return root;
}

function closeBrace(s: string, open: number): number {
  let quote: string | undefined;
  for (let i = open + 1; i < s.length; i++) {
    const c = s[i]!;
    if (quote !== undefined) {
      if (c === "\\") i++;
      else if (c === quote) quote = undefined;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === "}") return i;
  }
  throw new JsonPathError(`Cannot parse JSONPath "${s}": unclosed "{"`);
}

function unescape(s: string): string {
  return s.replace(
    /\\(.)/g,
    (_, c: string) => c === "n" ? "\n" : c === "t" ? "\t" : c === "r" ? "\r" : c,
  );
}

function walk(values: unknown[], steps: readonly Step[]): unknown[] {
  let current = values;
  for (const step of steps) {
    const next: unknown[] = [];
    for (const v of current) {
      switch (step.kind) {
        case "field":
          if (isJsonObject(v) && step.name in v) next.push(v[step.name]);
          break;
        case "index":
          if (Array.isArray(v)) {
            const item = v[step.index < 0 ? v.length + step.index : step.index];
            if (item !== undefined) next.push(item);
          }
          break;
        case "slice":
          if (Array.isArray(v)) next.push(...v.slice(step.start, step.end));
          break;
        case "wildcard":
          if (Array.isArray(v)) next.push(...v);
          else if (isJsonObject(v)) next.push(...Object.values(v));
          break;
        case "recursive":
          collect(v, step.name, next);
          break;
        case "filter":
          if (Array.isArray(v)) next.push(...v.filter((item) => matches(item, step)));
          break;
      }
    }
    current = next;
  }
  return current;
}

function collect(v: unknown, name: string, out: unknown[]): void {
  if (Array.isArray(v)) { for (const item of v) collect(item, name, out); }
  else if (isJsonObject(v)) {
    for (const [k, child] of Object.entries(v)) {
      if (name === "*" || k === name) out.push(child);
      collect(child, name, out);
    }
  }
}

function matches(item: unknown, filter: Extract<Step, { kind: "filter" }>): boolean {
  const found = walk([item], filter.path);
  if (filter.op === undefined) return found.length > 0;
  const left = found[0];
  const right = filter.value;
  switch (filter.op) {
    case "==":
      return left === right;
    case "!=":
      return left !== right;
    case "<":
      return (left as number) < (right as number);
    case ">":
      return (left as number) > (right as number);
    case "<=":
      return (left as number) <= (right as number);
    default:
      return (left as number) >= (right as number);
  }
}

function format(value: unknown): string {
  if (typeof value === "string") return value;
  if (value === null || value === undefined) return "";
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

function render(nodes: readonly Node[], data: unknown, out: string[]): void {
  for (const node of nodes) {
    if (node.kind === "text") out.push(node.text);
    else if (node.kind === "path") out.push(walk([data], node.steps).map(format).join(" "));
    else for (const item of walk([data], node.steps)) render(node.body, item, out);
  }
}

/**
 * A compiled kubectl JSONPath template.
 *
 * @example Usage
 * ```ts
 * import { JsonPath } from "./jsonpath.ts";
 * const names = new JsonPath("{range .items[*]}{.metadata.name}{\"\\n\"}{end}");
 * names.execute({ items: [{ metadata: { name: "a" } }, { metadata: { name: "b" } }] }); // "a\nb\n"
 * ```
 */
export class JsonPath {
  readonly #nodes: Node[];

  /**
   * @param template The template (`{.a.b}`), or a bare path (`.a.b`) as `--sort-by` takes.
   * @throws {JsonPathError} For a malformed template.
   */
  constructor(template: string) {
    this.#nodes = template.includes("{") ? parseTemplate(template) : [{
      kind: "path",
      steps: parsePath(template),
    }];
  }

  /**
   * @param data The object.
   * @returns The rendered text.
   */
  execute(data: unknown): string {
    const out: string[] = [];
    render(this.#nodes, data, out);
    return out.join("");
  }

  /**
   * @param data The object.
   * @returns The first value the template's first path finds (for sorting).
   */
  first(data: unknown): unknown {
    const node = this.#nodes.find((n) => n.kind === "path");
    return node === undefined || node.kind !== "path" ? undefined : walk([data], node.steps)[0];
  }
}
