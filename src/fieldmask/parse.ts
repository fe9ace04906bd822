/**
 * Field mask parsing: paths of JSON (camelCase) field names, checked against
 * an {@linkcode ObjectSchema} and compiled into a tree that
 * {@linkcode project} walks without looking at a string again.
 *
 * Work is linear in the size of the input: each path is scanned once, a bad
 * path stops at its first bad segment, and nothing recurses on input depth.
 *
 * @module
 */

import type { MessageSchema, ObjectSchema } from "./schema.ts";
import { FieldMaskError, quotePath } from "./field_mask_error.ts";

/**
 * Paths every projection keeps, asked for or not: a client must always be able
 * to tell pods apart (DESIGN.md §5).
 */
export const ALWAYS_KEPT_PATHS: readonly string[] = Object.freeze([
  "metadata.uid",
  "metadata.name",
  "metadata.namespace",
]);

/**
 * Deepest path accepted, in segments. The deepest path of a v1.Pod has about
 * ten; the bound keeps a recursive schema from turning a long hostile path
 * into a deep tree.
 */
export const MAX_PATH_DEPTH = 32;

/** One selected field of a message in a compiled mask. */
export interface MaskField {
  /** The JSON field name. */
  readonly name: string;
  /** The value is a JSON array; the sub-mask applies to each element. */
  readonly repeated: boolean;
  /** The fields to keep inside the value, or `null` to keep the value whole. */
  readonly mask: MaskNode | null;
}

/** The selected fields of one message, in schema order. */
export interface MaskNode {
  readonly fields: readonly MaskField[];
}

/**
 * A compiled, immutable field mask. Safe to share between requests and
 * watchers.
 */
export interface FieldMask {
  /**
   * Canonical form: the normalised paths (duplicates and paths covered by a
   * shorter one removed, {@linkcode ALWAYS_KEPT_PATHS} added), sorted and
   * joined by commas. Equivalent masks have equal keys, so a cache of
   * projected or encoded pods can be keyed by it. `""` for the whole pod.
   */
  readonly key: string;
  /** The mask selects the whole pod (no mask, or an empty one). */
  readonly isAll: boolean;
  /** The normalised paths, sorted; empty for the whole pod. */
  readonly paths: readonly string[];
  /** The compiled tree; `null` for the whole pod. */
  readonly root: MaskNode | null;
}

/** The mask that selects the whole pod. */
export const FIELD_MASK_ALL: FieldMask = Object.freeze({
  key: "",
  isAll: true,
  paths: Object.freeze([]),
  root: null,
});

/** A node of the tree under construction. */
interface BuildNode {
  /** The message type of the value this node selects in. */
  readonly type: string;
  /** The whole message is selected; `children` is then empty. */
  all: boolean;
  readonly children: Map<string, BuildChild>;
}

interface BuildChild {
  readonly repeated: boolean;
  /** `null` for a scalar or map field (always kept whole). */
  readonly node: BuildNode | null;
}

/**
 * Parses and compiles a field mask given as a list of paths (the
 * `google.protobuf.FieldMask` form). A path is dot-separated JSON field
 * names; it walks into message fields, repeated ones included
 * (`spec.containers.name` keeps `name` in every container), and may stop at a
 * scalar, a map or a whole message. Duplicate and overlapping paths are fine:
 * `status` plus `status.phase` is `status`.
 *
 * An empty list selects the whole pod, and so does a list holding a single
 * empty path (what an empty text mask splits into). Otherwise the result
 * always keeps {@linkcode ALWAYS_KEPT_PATHS}.
 *
 * @example Selecting container names and the phase
 * ```ts ignore
 * const mask = parseFieldMask(["status.phase", "spec.containers.name"], POD_SCHEMA);
 * mask.key; // "metadata.name,metadata.namespace,metadata.uid,spec.containers.name,status.phase"
 * ```
 *
 * @param paths The paths, e.g. `["metadata.labels", "status.podIPs"]`.
 * @param schema The object schema the paths name fields of.
 * @returns The compiled mask.
 * @throws {FieldMaskError} When a path is empty (among others), has an empty
 * segment, names an unknown field, goes through a scalar or into a map, or
 * has more than {@linkcode MAX_PATH_DEPTH} segments.
 * @throws {TypeError} When the schema itself is inconsistent (a message field
 * whose type it does not define).
 */
export function parseFieldMask(paths: readonly string[], schema: ObjectSchema): FieldMask {
  if (paths.length === 0 || (paths.length === 1 && paths[0] === "")) return FIELD_MASK_ALL;
  const builder = new MaskBuilder(schema);
  for (let i = 0; i < paths.length; i++) builder.add(paths[i] as string, i, paths.length);
  return builder.finish();
}

/**
 * Parses the text form of a field mask (gRPC metadata
 * `x-kubernetes-fieldmask`): paths separated by commas, whitespace around
 * each path ignored. Empty or blank text selects the whole pod.
 *
 * @example
 * ```ts ignore
 * const mask = parseFieldMaskText("metadata.labels, status.phase", POD_SCHEMA);
 * ```
 *
 * @param text The metadata value.
 * @param schema The object schema the paths name fields of.
 * @returns The compiled mask.
 * @throws {FieldMaskError} As {@linkcode parseFieldMask} does; an empty path
 * between commas (`"a,,b"`, a trailing comma) is an error.
 */
export function parseFieldMaskText(text: string, schema: ObjectSchema): FieldMask {
  const trimmed = text.trim();
  if (trimmed === "") return FIELD_MASK_ALL;
  // Walk the text instead of splitting it: a hostile megabyte of commas
  // then costs one scan, not a million strings.
  let count = 1;
  for (let at = trimmed.indexOf(","); at !== -1; at = trimmed.indexOf(",", at + 1)) count++;
  const builder = new MaskBuilder(schema);
  let start = 0;
  for (let i = 0; i < count; i++) {
    const comma = trimmed.indexOf(",", start);
    const end = comma === -1 ? trimmed.length : comma;
    builder.add(trimmed.slice(start, end).trim(), i, count);
    start = end + 1;
  }
  return builder.finish();
}

/** Collects checked paths into a tree, then freezes it into a {@linkcode FieldMask}. */
class MaskBuilder {
  readonly #schema: ObjectSchema;
  readonly #root: BuildNode;
  readonly #rootMessage: MessageSchema;

  constructor(schema: ObjectSchema) {
    this.#schema = schema;
    this.#root = { type: schema.root, all: false, children: new Map() };
    this.#rootMessage = messageOf(schema, schema.root);
  }

  /** Adds path `index` (0-based) of `count`. */
  add(path: string, index: number, count: number): void {
    if (path === "") {
      throw new FieldMaskError(
        `Cannot parse field mask: path ${index + 1} of ${count} is empty`,
        { path },
      );
    }
    addPath(this.#root, this.#rootMessage, path, this.#schema);
  }

  finish(): FieldMask {
    const root = this.#root;
    for (const path of ALWAYS_KEPT_PATHS) {
      try {
        addPath(root, this.#rootMessage, path, this.#schema);
      } catch (err) {
        // A schema without these fields is not a pod's: nothing to keep.
        if (!(err instanceof FieldMaskError)) throw err;
      }
    }
    const canonical: string[] = [];
    collectPaths(root, "", canonical);
    canonical.sort();
    return Object.freeze({
      key: canonical.join(","),
      isAll: false,
      paths: Object.freeze(canonical),
      root: freezeNode(root, this.#schema),
    });
  }
}

/** Checks one path against the schema and merges it into the tree. */
function addPath(
  root: BuildNode,
  rootMessage: MessageSchema,
  path: string,
  schema: ObjectSchema,
): void {
  // `node` turns null once an earlier path already selects this subtree
  // whole; the rest of the path is still checked against the schema.
  let node: BuildNode | null = root;
  let message = rootMessage;
  let messageType = root.type;
  let start = 0;
  let depth = 0;
  for (;;) {
    const dot = path.indexOf(".", start);
    const last = dot === -1;
    const end = last ? path.length : dot;
    if (end === start) {
      throw new FieldMaskError(
        `Cannot parse field mask path ${quotePath(path)}: empty segment at offset ${start}`,
        { path },
      );
    }
    if (++depth > MAX_PATH_DEPTH) {
      throw new FieldMaskError(
        `Cannot parse field mask path ${quotePath(path)}: more than ${MAX_PATH_DEPTH} segments`,
        { path },
      );
    }
    const name = path.slice(start, end);
    const field = message.fields.get(name);
    if (field === undefined) {
      throw new FieldMaskError(
        `Cannot parse field mask path ${quotePath(path)}: unknown field ${quotePath(name)}` +
          ` in ${quotePath(shortName(messageType))}`,
        { path },
      );
    }
    if (field.kind !== "message") {
      if (!last) {
        const why = field.kind === "map"
          ? "is a map; a path may stop at it but not go into it"
          : "is a scalar and has no fields";
        throw new FieldMaskError(
          `Cannot parse field mask path ${quotePath(path)}: field ${quotePath(name)} ${why}`,
          { path },
        );
      }
      if (node !== null && !node.children.has(name)) {
        node.children.set(name, { repeated: field.repeated, node: null });
      }
      return;
    }
    const type = field.type;
    if (type === undefined) {
      throw new TypeError(`Cannot walk field mask schema: message field "${name}" has no type`);
    }
    const child = messageOf(schema, type);
    if (node !== null) {
      let entry = node.children.get(name);
      if (entry === undefined) {
        entry = { repeated: field.repeated, node: { type, all: false, children: new Map() } };
        node.children.set(name, entry);
      }
      node = entry.node === null || entry.node.all ? null : entry.node;
    }
    if (last) {
      if (node !== null) {
        node.all = true;
        node.children.clear();
      }
      return;
    }
    message = child;
    messageType = type;
    start = dot + 1;
  }
}

/** Finds a message type, or throws when the schema lacks it. */
function messageOf(schema: ObjectSchema, type: string): MessageSchema {
  const message = schema.messages.get(type);
  if (message === undefined) {
    throw new TypeError(`Cannot walk field mask schema: message type "${type}" is not defined`);
  }
  return message;
}

/** `k8s.io.api.core.v1.PodSpec` → `PodSpec`. */
function shortName(type: string): string {
  return type.slice(type.lastIndexOf(".") + 1);
}

/** Appends the canonical paths below `node` to `out`. */
function collectPaths(node: BuildNode, prefix: string, out: string[]): void {
  for (const [name, child] of node.children) {
    const path = prefix + name;
    if (child.node === null || child.node.all) out.push(path);
    else collectPaths(child.node, path + ".", out);
  }
}

/** Turns a tree under construction into its frozen form, fields in schema order. */
function freezeNode(node: BuildNode, schema: ObjectSchema): MaskNode {
  const fields: MaskField[] = [];
  for (const name of messageOf(schema, node.type).fields.keys()) {
    const child = node.children.get(name);
    if (child === undefined) continue;
    const mask = child.node === null || child.node.all ? null : freezeNode(child.node, schema);
    fields.push(Object.freeze({ name, repeated: child.repeated, mask }));
  }
  return Object.freeze({ fields: Object.freeze(fields) });
}
