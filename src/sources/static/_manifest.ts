/**
 * Pure parts of the static pod source: decoding a manifest file into pod
 * documents, checking that each is a v1 Pod, and applying the kubelet's
 * static pod treatment (name, namespace, annotations, defaults, toleration,
 * Pending status).
 *
 * @module
 */

import { parseAllDocuments } from "yaml";
import { canonicalJson, isJsonObject, type JsonObject, type JsonValue } from "../../model/json.ts";
import type { PodObject } from "../../model/pod.ts";
import { CONFIG_ANNOTATION } from "../../model/kubelet_keys.ts";
import { pendingStatus, qosClassOf } from "../../status/mod.ts";

/** Why a manifest (or one document of it) was skipped; a metric label value. */
export type ManifestRejectReason =
  | "too_large"
  | "binary"
  | "unreadable"
  | "bad_yaml"
  | "not_pod"
  | "invalid_pod"
  | "duplicate_name";

/** A manifest problem: the reason label and a sentence for the log. */
export class ManifestError extends Error {
  /** The metric label. */
  readonly reason: ManifestRejectReason;

  /**
   * @param message What is wrong, for the log.
   * @param reason The metric label.
   */
  constructor(message: string, reason: ManifestRejectReason) {
    super(message);
    this.name = "ManifestError";
    this.reason = reason;
  }
}

/** One document of a manifest file: a pod, or why it is not one. */
export type ManifestDocument =
  | { readonly ok: true; readonly pod: JsonObject; readonly canonical: string }
  | { readonly ok: false; readonly error: ManifestError };

const DECODER = new TextDecoder("utf-8", { fatal: true });
/** YAML aliases expanded per document at most (a "billion laughs" guard). */
const MAX_ALIASES = 100;
/** Longest object name (a DNS subdomain). */
const MAX_NAME_LENGTH = 253;
const DNS_SUBDOMAIN_REGEXP = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_LABEL_REGEXP = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/**
 * Turns a parsed YAML value into plain JSON, or `undefined` when it holds
 * something JSON cannot (binary, infinities, NaN).
 */
function toJson(value: unknown, depth = 0): JsonValue | undefined {
  if (depth > 64) return undefined;
  if (value === null || typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number") return Number.isFinite(value) ? value : undefined;
  if (Array.isArray(value)) {
    const out: JsonValue[] = [];
    for (const item of value) {
      const json = toJson(item, depth + 1);
      if (json === undefined) return undefined;
      out.push(json);
    }
    return out;
  }
  if (typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
    const out: JsonObject = {};
    for (const [key, item] of Object.entries(value)) {
      const json = toJson(item, depth + 1);
      if (json === undefined) return undefined;
      out[key] = json;
    }
    return out;
  }
  return undefined;
}

/**
 * Decodes a manifest file: UTF-8 text holding one or more YAML (or JSON)
 * documents, each a v1 Pod. Empty documents are ignored.
 *
 * @param bytes The file's content.
 * @param file The file's name, for messages.
 * @returns One entry per non-empty document.
 * @throws {ManifestError} When the file is not text (reason `binary`).
 */
export function decodeManifest(bytes: Uint8Array, file: string): ManifestDocument[] {
  if (bytes.includes(0)) {
    throw new ManifestError(`Cannot read manifest "${file}": it is binary`, "binary");
  }
  let text: string;
  try {
    text = DECODER.decode(bytes);
  } catch {
    throw new ManifestError(`Cannot read manifest "${file}": it is not UTF-8 text`, "binary");
  }
  const out: ManifestDocument[] = [];
  const docs = parseAllDocuments(text, { uniqueKeys: true });
  docs.forEach((doc, index) => {
    const where = docs.length > 1
      ? `document ${index + 1} of manifest "${file}"`
      : `manifest "${file}"`;
    if (doc.errors.length > 0) {
      const first = doc.errors[0]!.message.split("\n")[0];
      out.push({
        ok: false,
        error: new ManifestError(`Cannot parse ${where}: ${first}`, "bad_yaml"),
      });
      return;
    }
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: MAX_ALIASES });
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      out.push({
        ok: false,
        error: new ManifestError(`Cannot parse ${where}: ${why}`, "bad_yaml"),
      });
      return;
    }
    if (value === null || value === undefined) return;
    const json = toJson(value);
    if (!isJsonObject(json)) {
      const message = json === undefined
        ? `Cannot use ${where}: it holds values JSON cannot represent`
        : `Cannot use ${where}: it is not an object`;
      out.push({
        ok: false,
        error: new ManifestError(message, json === undefined ? "bad_yaml" : "not_pod"),
      });
      return;
    }
    const problem = checkPod(json, where);
    if (problem !== undefined) out.push({ ok: false, error: problem });
    else out.push({ ok: true, pod: json, canonical: canonicalJson(json) });
  });
  return out;
}

function checkPod(doc: JsonObject, where: string): ManifestError | undefined {
  if (doc.kind !== "Pod" || doc.apiVersion !== "v1") {
    const what = `${String(doc.apiVersion ?? "")}/${String(doc.kind ?? "")}`;
    return new ManifestError(`Cannot use ${where}: it is "${what}", not a v1 Pod`, "not_pod");
  }
  const invalid = (why: string) =>
    new ManifestError(`Cannot use pod in ${where}: ${why}`, "invalid_pod");
  const metadata = doc.metadata;
  if (!isJsonObject(metadata)) return invalid("it has no metadata");
  const name = metadata.name;
  if (typeof name !== "string" || name === "") return invalid("it has no metadata.name");
  if (name.length > MAX_NAME_LENGTH || !DNS_SUBDOMAIN_REGEXP.test(name)) {
    return invalid(`name "${name}" is not a DNS subdomain`);
  }
  const namespace = metadata.namespace;
  if (namespace !== undefined && namespace !== null && namespace !== "") {
    if (
      typeof namespace !== "string" || namespace.length > 63 || !DNS_LABEL_REGEXP.test(namespace)
    ) {
      return invalid(`namespace "${String(namespace)}" is not a DNS label`);
    }
  }
  if (metadata.uid !== undefined && metadata.uid !== null && typeof metadata.uid !== "string") {
    return invalid("metadata.uid is not a string");
  }
  for (const key of ["labels", "annotations"] as const) {
    const map = metadata[key];
    if (map === undefined || map === null) continue;
    if (!isJsonObject(map) || Object.values(map).some((v) => typeof v !== "string")) {
      return invalid(`metadata.${key} is not a map of strings`);
    }
  }
  const spec = doc.spec;
  if (!isJsonObject(spec)) return invalid("it has no spec");
  const containers = spec.containers;
  if (!Array.isArray(containers) || containers.length === 0) return invalid("it has no containers");
  const names = new Set<string>();
  for (const key of ["initContainers", "containers"] as const) {
    const list = spec[key];
    if (list === undefined || list === null) continue;
    if (!Array.isArray(list)) return invalid(`spec.${key} is not a list`);
    for (const c of list) {
      if (!isJsonObject(c) || typeof c.name !== "string" || !DNS_LABEL_REGEXP.test(c.name)) {
        return invalid(`a container of spec.${key} has no valid name`);
      }
      if (typeof c.image !== "string" || c.image.trim() === "") {
        return invalid(`container "${c.name}" has no image`);
      }
      if (names.has(c.name)) return invalid(`container name "${c.name}" is used twice`);
      names.add(c.name);
    }
  }
  return undefined;
}

/** Options of {@linkcode staticPod}. */
export interface StaticPodOptions {
  /** The node's name (lower-cased into the pod name, as the kubelet does). */
  readonly nodeName: string;
  /** The pod's UID: the manifest's own, or one derived from its content. */
  readonly uid: string;
  /** `kubernetes.io/config.seen`: when this version of the pod was first read. */
  readonly seen: string;
}

/**
 * The full name the kubelet gives a static pod: `<name>-<node name>`, the
 * node name lower-cased.
 *
 * @param name `metadata.name` in the manifest.
 * @param nodeName The node's name.
 * @returns The pod's name.
 */
export function staticPodName(name: string, nodeName: string): string {
  return `${name}-${nodeName.toLowerCase()}`;
}

function imagePullPolicy(image: string): string {
  // The API server's default: Always for ":latest" or an untagged image.
  const lastPart = image.slice(image.lastIndexOf("/") + 1);
  if (image.includes("@")) return "IfNotPresent";
  const colon = lastPart.lastIndexOf(":");
  return colon < 0 || lastPart.slice(colon + 1) === "latest" ? "Always" : "IfNotPresent";
}

function defaultContainer(c: JsonValue): JsonValue {
  if (!isJsonObject(c)) return c;
  const out: JsonObject = { ...c };
  out.terminationMessagePath ??= "/dev/termination-log";
  out.terminationMessagePolicy ??= "File";
  if (typeof out.image === "string") out.imagePullPolicy ??= imagePullPolicy(out.image);
  if (Array.isArray(out.ports)) {
    out.ports = out.ports.map((p) => isJsonObject(p) ? { ...p, protocol: p.protocol ?? "TCP" } : p);
  }
  return out;
}

/**
 * Applies the API server's common pod defaults (the kubelet decodes static
 * manifests through the same defaulting): restart and DNS policy, scheduler,
 * grace period, service links, and per container the termination message
 * path and policy, pull policy and port protocol.
 */
function defaultSpec(spec: JsonObject, nodeName: string): JsonObject {
  const out: JsonObject = { ...spec };
  out.restartPolicy ??= "Always";
  out.terminationGracePeriodSeconds ??= 30;
  out.dnsPolicy ??= "ClusterFirst";
  out.schedulerName ??= "default-scheduler";
  out.securityContext ??= {};
  out.enableServiceLinks ??= true;
  for (const key of ["initContainers", "containers"] as const) {
    const list = out[key];
    if (Array.isArray(list)) out[key] = list.map(defaultContainer);
  }
  // Static pods tolerate every NoExecute taint, so node problems never evict them.
  const tolerations = Array.isArray(out.tolerations) ? [...out.tolerations] : [];
  const has = tolerations.some((t) =>
    isJsonObject(t) && t.operator === "Exists" && t.effect === "NoExecute" &&
    (t.key === undefined || t.key === "")
  );
  if (!has) tolerations.push({ operator: "Exists", effect: "NoExecute" });
  out.tolerations = tolerations;
  out.nodeName = nodeName;
  return out;
}

/**
 * Builds the pod the kubelet would run from a manifest document: the name
 * gets the node's name appended, the namespace defaults to `default`,
 * `spec.nodeName` is set, the `kubernetes.io/config.*` annotations are added
 * and the status is `Pending` with every container waiting to be created.
 *
 * @param doc A checked manifest document (see {@linkcode decodeManifest}).
 * @param options Node name, UID and first-seen time.
 * @returns The pod.
 */
export function staticPod(doc: JsonObject, options: StaticPodOptions): PodObject {
  const source = doc.metadata as JsonObject;
  const metadata: PodObject["metadata"] = {
    ...source,
    name: staticPodName(source.name as string, options.nodeName),
    namespace: typeof source.namespace === "string" && source.namespace !== ""
      ? source.namespace
      : "default",
    uid: options.uid,
  };
  for (const key of Object.keys(metadata)) if (metadata[key] === null) delete metadata[key];
  delete metadata.selfLink;
  delete metadata.resourceVersion;
  metadata.annotations = {
    ...(isJsonObject(source.annotations) ? source.annotations as Record<string, string> : {}),
    [CONFIG_ANNOTATION.hash]: options.uid,
    [CONFIG_ANNOTATION.seen]: options.seen,
    [CONFIG_ANNOTATION.source]: "file",
  };
  const spec = defaultSpec(doc.spec as JsonObject, options.nodeName);
  const since = options.seen.replace(/\.\d+Z$/, "Z");
  const status = pendingStatus(spec, { extra: { qosClass: qosClassOf(spec) }, since });
  const pod: PodObject = { metadata, spec, status };
  return pod;
}
