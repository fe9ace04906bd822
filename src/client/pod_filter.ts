/**
 * Namespace, label selector and field selector, evaluated on the client:
 * the kubelet-shaped services take no selector, so the CLI filters what they
 * send, with the API server's syntax and the pod fields it supports.
 *
 * @module
 */

import { isJsonObject } from "../model/json.ts";
import type { PodObject } from "../model/pod.ts";

/** A selector the user typed that cannot be parsed; the message names the bad part. */
export class SelectorError extends SyntaxError {
  /** @param message What is wrong. */
  constructor(message: string) {
    super(message);
    this.name = "SelectorError";
  }
}

/** Pod fields a field selector may name (the API server's list for pods). */
export const SELECTABLE_FIELDS: Readonly<Record<string, (pod: PodObject) => string>> = {
  "metadata.name": (p) => p.metadata.name,
  "metadata.namespace": (p) => p.metadata.namespace,
  "spec.nodeName": (p) => str(p.spec?.nodeName),
  "spec.restartPolicy": (p) => str(p.spec?.restartPolicy),
  "spec.schedulerName": (p) => str(p.spec?.schedulerName),
  "spec.serviceAccountName": (p) => str(p.spec?.serviceAccountName),
  "spec.hostNetwork": (p) => String(p.spec?.hostNetwork === true),
  "status.phase": (p) => str(p.status?.phase),
  "status.podIP": (p) => str(p.status?.podIP),
  "status.nominatedNodeName": (p) => str(p.status?.nominatedNodeName),
};

function str(v: unknown): string {
  return typeof v === "string" ? v : "";
}

/** What to keep. */
export interface PodFilterSpec {
  namespace?: string | undefined;
  labelSelector?: string | undefined;
  fieldSelector?: string | undefined;
}

type Test = (pod: PodObject) => boolean;

function splitTerms(text: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "(") depth++;
    else if (c === ")") depth--;
    else if (c === "," && depth === 0) {
      terms.push(text.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(text.slice(start));
  return terms.map((t) => t.trim());
}

const LABEL_KEY =
  /^([a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?\/)?[a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?$/;

function labels(pod: PodObject): Record<string, unknown> {
  return isJsonObject(pod.metadata.labels) ? pod.metadata.labels : {};
}

function labelTest(term: string): Test {
  let m = /^(!?)\s*([^=!\s()]+)$/.exec(term);
  if (m !== null) {
    const [, not, key] = m;
    checkKey(key!, term);
    return not ? (p) => !(key! in labels(p)) : (p) => key! in labels(p);
  }
  m = /^([^=!\s()]+)\s*(==|=|!=)\s*([^=!\s()]*)$/.exec(term);
  if (m !== null) {
    const [, key, op, value] = m;
    checkKey(key!, term);
    return op === "!=" ? (p) => labels(p)[key!] !== value : (p) => labels(p)[key!] === value;
  }
  m = /^([^=!\s()]+)\s+(in|notin)\s*\(([^()]*)\)$/.exec(term);
  if (m !== null) {
    const [, key, op, list] = m;
    checkKey(key!, term);
    const values = new Set(list!.split(",").map((v) => v.trim()));
    return op === "in"
      ? (p) => values.has(labels(p)[key!] as string)
      : (p) => !values.has(labels(p)[key!] as string);
  }
  throw new SelectorError(`Cannot parse label selector term "${term}"`);
}

function checkKey(key: string, term: string): void {
  if (!LABEL_KEY.test(key)) {
    throw new SelectorError(`Cannot use label key "${key}" in selector term "${term}"`);
  }
}

function fieldTest(term: string): Test {
  const m = /^([^=!\s]+)\s*(==|=|!=)\s*(.*)$/.exec(term);
  if (m === null) throw new SelectorError(`Cannot parse field selector term "${term}"`);
  const [, field, op, value] = m;
  const read = SELECTABLE_FIELDS[field!];
  if (read === undefined) {
    throw new SelectorError(
      `Cannot select on field "${field}": use ${Object.keys(SELECTABLE_FIELDS).join(", ")}`,
    );
  }
  return op === "!=" ? (p) => read(p) !== value : (p) => read(p) === value;
}

/**
 * Compiles namespace and selectors into one predicate.
 *
 * @example Usage
 * ```ts
 * import { compilePodFilter } from "./pod_filter.ts";
 * const keep = compilePodFilter({ labelSelector: "app in (web,api),!canary", fieldSelector: "status.phase=Running" });
 * ```
 *
 * @param spec Namespace and selectors; empty parts keep everything.
 * @returns The predicate.
 * @throws {SelectorError} Naming the term that cannot be parsed.
 */
export function compilePodFilter(spec: PodFilterSpec): (pod: PodObject) => boolean {
  const tests: Test[] = [];
  if (spec.namespace) {
    const ns = spec.namespace;
    tests.push((p) => p.metadata.namespace === ns);
  }
  if (spec.labelSelector?.trim()) tests.push(...splitTerms(spec.labelSelector).map(labelTest));
  if (spec.fieldSelector?.trim()) tests.push(...splitTerms(spec.fieldSelector).map(fieldTest));
  return (pod) => tests.every((t) => t(pod));
}
