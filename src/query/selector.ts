/**
 * Label and field selectors in Kubernetes syntax, parsed once per request
 * into matchers that read a pod's JSON object (never its protobuf bytes).
 *
 * Label selectors follow `k8s.io/apimachinery/pkg/labels`: `a=b`, `a==b`,
 * `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`, `a>1`, `a<1`, comma = AND.
 * Field selectors follow `k8s.io/apimachinery/pkg/fields` over the pod
 * fields the API server supports: `=`, `==`, `!=`, comma = AND, with `\`
 * escaping `,`, `=`, `!` and `\` in values.
 *
 * @module
 */

import { objectOf, stringOf } from "../model/json.ts";
import type { PodObject } from "../model/pod.ts";
import {
  containersHoldingDevice,
  podHoldsResource,
  type PodResources,
} from "../model/pod_resources.ts";
import { SelectorError } from "./errors.ts";

/** What a List or Watch selects (DESIGN.md §14 `Selector`). */
export interface SelectorSpec {
  /** Empty: every namespace. */
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /**
   * Only pods holding this resource (podresources API): a device plugin
   * resource (`nvidia.com/gpu`), a DRA driver, `cpu` (exclusive CPUs) or a
   * memory type (`hugepages-1Gi`).
   */
  resourceName?: string;
  /** Only pods holding this device: a device plugin ID, a DRA device or CDI name. */
  deviceId?: string;
}

/** A compiled selector. */
export interface PodSelector {
  /** Canonical text of the selection: equal keys select the same pods. */
  readonly key: string;
  /** `true` when it selects every pod. */
  readonly isAll: boolean;
  /** The namespace it is limited to, or `""`. */
  readonly namespace: string;
  /** `true` when it reads what pods hold (podresources), not only the pod. */
  readonly usesResources: boolean;
  /**
   * @param pod A pod object.
   * @param resources What the pod holds (podresources), if known.
   * @returns Whether the pod is selected.
   */
  matches(pod: Readonly<PodObject>, resources?: PodResources): boolean;
}

/** Selects everything. */
export const SELECT_ALL: PodSelector = Object.freeze({
  key: "",
  isAll: true,
  namespace: "",
  usesResources: false,
  matches: () => true,
});

/** The pod fields a field selector may name, as the API server supports them. */
export const POD_SELECTABLE_FIELDS = [
  "metadata.name",
  "metadata.namespace",
  "spec.nodeName",
  "spec.restartPolicy",
  "spec.schedulerName",
  "spec.serviceAccountName",
  "spec.hostNetwork",
  "status.phase",
  "status.podIP",
  "status.nominatedNodeName",
] as const;

/** One of {@linkcode POD_SELECTABLE_FIELDS}. */
export type PodSelectableField = typeof POD_SELECTABLE_FIELDS[number];

const SELECTABLE: ReadonlySet<string> = new Set(POD_SELECTABLE_FIELDS);

/**
 * Reads a selectable field of a pod as the API server's
 * `PodToSelectableFields` renders it (absent strings are `""`,
 * `spec.hostNetwork` is `"true"` or `"false"`).
 *
 * @param pod The pod.
 * @param field The field.
 * @returns The field's value as text.
 */
export function podFieldValue(pod: Readonly<PodObject>, field: PodSelectableField): string {
  switch (field) {
    case "metadata.name":
      return pod.metadata.name;
    case "metadata.namespace":
      return pod.metadata.namespace;
    case "spec.nodeName":
      return stringOf(objectOf(pod.spec).nodeName);
    case "spec.restartPolicy":
      // The API server defaults it; a pod from a manifest may leave it out.
      return stringOf(objectOf(pod.spec).restartPolicy) || "Always";
    case "spec.schedulerName":
      return stringOf(objectOf(pod.spec).schedulerName);
    case "spec.serviceAccountName":
      return stringOf(objectOf(pod.spec).serviceAccountName);
    case "spec.hostNetwork":
      return objectOf(pod.spec).hostNetwork === true ? "true" : "false";
    case "status.phase":
      return stringOf(objectOf(pod.status).phase);
    case "status.podIP": {
      const status = objectOf(pod.status);
      const ips = status.podIPs;
      if (Array.isArray(ips) && ips.length > 0) return stringOf(objectOf(ips[0]).ip);
      return stringOf(status.podIP);
    }
    case "status.nominatedNodeName":
      return stringOf(objectOf(pod.status).nominatedNodeName);
  }
}

// ---- label selectors ------------------------------------------------------

type LabelOp = "exists" | "!exists" | "=" | "!=" | "in" | "notin" | "gt" | "lt";

interface LabelRequirement {
  readonly key: string;
  readonly op: LabelOp;
  readonly values: readonly string[];
}

type TokenKind =
  | "ident"
  | "!"
  | "="
  | "=="
  | "!="
  | "("
  | ")"
  | ","
  | "<"
  | ">"
  | "in"
  | "notin"
  | "end";

interface Token {
  readonly kind: TokenKind;
  readonly text: string;
  readonly pos: number;
}

const SPECIAL = new Set(["!", "=", "(", ")", ",", "<", ">"]);

function isSpace(ch: string): boolean {
  return ch === " " || ch === "\t" || ch === "\n" || ch === "\r";
}

function lex(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const ch = text[i]!;
    if (isSpace(ch)) {
      i++;
      continue;
    }
    if (SPECIAL.has(ch)) {
      const two = text.slice(i, i + 2);
      if (two === "==" || two === "!=") {
        tokens.push({ kind: two, text: two, pos: i });
        i += 2;
      } else {
        tokens.push({ kind: ch as TokenKind, text: ch, pos: i });
        i++;
      }
      continue;
    }
    const start = i;
    while (i < text.length && !isSpace(text[i]!) && !SPECIAL.has(text[i]!)) i++;
    const word = text.slice(start, i);
    const kind = word === "in" ? "in" : word === "notin" ? "notin" : "ident";
    tokens.push({ kind, text: word, pos: start });
  }
  tokens.push({ kind: "end", text: "", pos: text.length });
  return tokens;
}

const NAME_PART = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

function validLabelKey(key: string): boolean {
  const slash = key.indexOf("/");
  const name = slash < 0 ? key : key.slice(slash + 1);
  if (slash >= 0) {
    const prefix = key.slice(0, slash);
    if (prefix === "" || prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix)) return false;
  }
  return name.length > 0 && name.length <= 63 && NAME_PART.test(name);
}

function validLabelValue(value: string): boolean {
  return value.length <= 63 && LABEL_VALUE.test(value);
}

class LabelParser {
  readonly #text: string;
  readonly #tokens: Token[];
  #position = 0;

  constructor(text: string) {
    this.#text = text;
    this.#tokens = lex(text);
  }

  parse(): LabelRequirement[] {
    const out: LabelRequirement[] = [];
    if (this.#peek().kind === "end") return out;
    for (;;) {
      out.push(this.#requirement());
      const next = this.#consume();
      if (next.kind === "end") return out;
      if (next.kind !== ",") this.#fail(next, 'expected "," or the end');
    }
  }

  #peek(): Token {
    return this.#tokens[this.#position]!;
  }

  #consume(): Token {
    const t = this.#tokens[this.#position]!;
    if (t.kind !== "end") this.#position++;
    return t;
  }

  #fail(token: Token, expected: string): never {
    const shown = token.kind === "end" ? "end of input" : `"${token.text}"`;
    throw new SelectorError(
      `Cannot parse label selector ${JSON.stringify(this.#text)}: found ${shown} at position ${
        token.pos + 1
      }, ${expected}`,
      token.kind === "end" ? "" : token.text,
    );
  }

  #key(token: Token): string {
    if (token.kind !== "ident" && token.kind !== "in" && token.kind !== "notin") {
      this.#fail(token, "expected a label key");
    }
    if (!validLabelKey(token.text)) this.#fail(token, "not a valid label key");
    return token.text;
  }

  #value(): string {
    const t = this.#peek();
    if (t.kind === "ident" || t.kind === "in" || t.kind === "notin") {
      this.#consume();
      if (!validLabelValue(t.text)) this.#fail(t, "not a valid label value");
      return t.text;
    }
    // `a=` selects the empty value, as Kubernetes allows.
    if (t.kind === "," || t.kind === "end" || t.kind === ")") return "";
    return this.#fail(t, "expected a label value");
  }

  #requirement(): LabelRequirement {
    const first = this.#consume();
    if (first.kind === "!") {
      return { key: this.#key(this.#consume()), op: "!exists", values: [] };
    }
    const key = this.#key(first);
    const op = this.#peek();
    switch (op.kind) {
      case ",":
      case "end":
        return { key, op: "exists", values: [] };
      case "=":
      case "==":
        this.#consume();
        return { key, op: "=", values: [this.#value()] };
      case "!=":
        this.#consume();
        return { key, op: "!=", values: [this.#value()] };
      case "in":
      case "notin": {
        this.#consume();
        return { key, op: op.kind, values: this.#set() };
      }
      case "<":
      case ">": {
        this.#consume();
        const t = this.#consume();
        if (t.kind !== "ident" || !/^-?\d+$/.test(t.text)) this.#fail(t, "expected an integer");
        return { key, op: op.kind === ">" ? "gt" : "lt", values: [t.text] };
      }
      default:
        return this.#fail(op, 'expected an operator (=, ==, !=, in, notin, <, >) or ","');
    }
  }

  #set(): string[] {
    const open = this.#consume();
    if (open.kind !== "(") this.#fail(open, 'expected "("');
    const values: string[] = [];
    for (;;) {
      values.push(this.#value());
      const t = this.#consume();
      if (t.kind === ")") return values;
      if (t.kind !== ",") this.#fail(t, 'expected "," or ")"');
    }
  }
}

function labelMatches(req: LabelRequirement, labels: Readonly<Record<string, string>>): boolean {
  const has = Object.hasOwn(labels, req.key);
  const value = has ? labels[req.key]! : "";
  switch (req.op) {
    case "exists":
      return has;
    case "!exists":
      return !has;
    case "=":
      return has && value === req.values[0];
    case "!=":
      return !has || value !== req.values[0];
    case "in":
      return has && req.values.includes(value);
    case "notin":
      return !has || !req.values.includes(value);
    case "gt":
    case "lt": {
      if (!has || !/^-?\d+$/.test(value)) return false;
      const n = Number(value);
      const bound = Number(req.values[0]);
      return req.op === "gt" ? n > bound : n < bound;
    }
  }
}

function labelText(req: LabelRequirement): string {
  switch (req.op) {
    case "exists":
      return req.key;
    case "!exists":
      return `!${req.key}`;
    case "in":
    case "notin":
      return `${req.key} ${req.op} (${[...req.values].sort().join(",")})`;
    case "gt":
      return `${req.key}>${req.values[0]}`;
    case "lt":
      return `${req.key}<${req.values[0]}`;
    default:
      return `${req.key}${req.op}${req.values[0]}`;
  }
}

/**
 * Parses a label selector.
 *
 * @example
 * ```ts
 * const reqs = parseLabelSelector("app in (web,api),!canary");
 * ```
 *
 * @param text Kubernetes label selector syntax; empty selects everything.
 * @returns The requirements (ANDed).
 * @throws {SelectorError} Naming the token the parser stopped at.
 */
export function parseLabelSelector(text: string): readonly LabelRequirement[] {
  return new LabelParser(text).parse();
}

// ---- field selectors ------------------------------------------------------

interface FieldRequirement {
  readonly field: PodSelectableField;
  readonly negate: boolean;
  readonly value: string;
}

function splitUnescaped(text: string, sep: string): string[] {
  const parts: string[] = [];
  let current = "";
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (ch === "\\" && i + 1 < text.length) {
      current += ch + text[i + 1];
      i++;
    } else if (ch === sep) {
      parts.push(current);
      current = "";
    } else current += ch;
  }
  parts.push(current);
  return parts;
}

function unescapeValue(text: string, selector: string): string {
  let out = "";
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (ch === "\\") {
      const next = text[i + 1];
      if (next === undefined || !"\\,=!".includes(next)) {
        throw new SelectorError(
          `Cannot parse field selector ${JSON.stringify(selector)}: invalid escape in "${text}"`,
          text,
        );
      }
      out += next;
      i++;
    } else if (ch === "," || ch === "=") {
      throw new SelectorError(
        `Cannot parse field selector ${
          JSON.stringify(selector)
        }: unescaped "${ch}" in value "${text}"`,
        text,
      );
    } else out += ch;
  }
  return out;
}

/**
 * Parses a field selector over the pod fields the API server supports.
 *
 * @param text For example `spec.nodeName=node-1,status.phase!=Succeeded`.
 * @returns The requirements (ANDed).
 * @throws {SelectorError} For a term without operator or an unsupported field, naming it.
 */
export function parseFieldSelector(text: string): readonly FieldRequirement[] {
  const out: FieldRequirement[] = [];
  if (text.trim() === "") return out;
  for (const term of splitUnescaped(text, ",")) {
    const match = /^(.*?)(!=|==|=)(.*)$/s.exec(term);
    // An operator inside an escaped value is not the operator.
    if (match === null || match[1]!.includes("\\")) {
      throw new SelectorError(
        `Cannot parse field selector ${JSON.stringify(text)}: "${term}" has no operator`,
        term,
      );
    }
    const field = match[1]!.trim();
    if (!SELECTABLE.has(field)) {
      throw new SelectorError(
        `Cannot use field selector ${
          JSON.stringify(text)
        }: field label "${field}" not supported for pods`,
        field,
      );
    }
    out.push({
      field: field as PodSelectableField,
      negate: match[2] === "!=",
      value: unescapeValue(match[3]!, text),
    });
  }
  return out;
}

// ---- compiled selector ----------------------------------------------------

const NO_LABELS: Readonly<Record<string, string>> = Object.freeze({});

/**
 * Compiles a selection: namespace, label selector and field selector.
 *
 * @example
 * ```ts
 * const selector = compileSelector({ namespace: "payments", labelSelector: "app=api" });
 * selector.matches(pod);
 * ```
 *
 * @param spec What to select; empty parts select everything.
 * @returns The matcher.
 * @throws {SelectorError} For a malformed selector, naming the token.
 */
export function compileSelector(spec: SelectorSpec): PodSelector {
  const namespace = spec.namespace ?? "";
  const labels = parseLabelSelector(spec.labelSelector ?? "");
  const fields = parseFieldSelector(spec.fieldSelector ?? "");
  const resourceName = spec.resourceName ?? "";
  const deviceId = spec.deviceId ?? "";
  const usesResources = resourceName !== "" || deviceId !== "";
  if (namespace === "" && labels.length === 0 && fields.length === 0 && !usesResources) {
    return SELECT_ALL;
  }
  const parts: unknown[] = [
    namespace,
    labels.map(labelText).sort(),
    fields.map((f) => `${f.field}${f.negate ? "!=" : "="}${f.value}`).sort(),
  ];
  // Keys of selections without these parts stay what they were.
  if (usesResources) parts.push(resourceName, deviceId);
  const key = JSON.stringify(parts);
  return Object.freeze({
    key,
    isAll: false,
    namespace,
    usesResources,
    matches(pod: Readonly<PodObject>, resources?: PodResources): boolean {
      if (namespace !== "" && pod.metadata.namespace !== namespace) return false;
      if (resourceName !== "" && !podHoldsResource(resources, resourceName)) return false;
      if (deviceId !== "" && containersHoldingDevice(resources, deviceId).length === 0) {
        return false;
      }
      if (labels.length > 0) {
        const podLabels = pod.metadata.labels ?? NO_LABELS;
        for (const req of labels) if (!labelMatches(req, podLabels)) return false;
      }
      for (const req of fields) {
        if ((podFieldValue(pod, req.field) === req.value) === req.negate) return false;
      }
      return true;
    },
  });
}
