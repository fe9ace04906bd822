/**
 * A small reflection over the JSON descriptors in `generated/` folders (the
 * shape `scripts/gen_proto.ts` and `scripts/gen_cri_proto.ts` write): message
 * types with their fields in field-number order, enums, nested types, and
 * type names resolved as protoc does (innermost scope first, then outwards).
 * Only what the pod plan and the plain-object codec need.
 *
 * @module
 */

/** One field of a JSON descriptor. */
export interface DescriptorField {
  readonly type: string;
  readonly id: number;
  readonly rule?: string;
  readonly keyType?: string;
  /** The `.proto` spelling when the descriptor's names are camelCase. */
  readonly protoName?: string;
  readonly options?: { readonly packed?: boolean; readonly "proto3_optional"?: boolean };
}

/** A namespace, message type, enum or service of a JSON descriptor. */
export interface DescriptorNode {
  readonly nested?: { readonly [name: string]: DescriptorNode };
  readonly fields?: { readonly [name: string]: DescriptorField };
  readonly values?: { readonly [name: string]: number };
  readonly edition?: string;
  readonly oneofs?: { readonly [name: string]: { readonly oneof: readonly string[] } };
  readonly options?: object;
  /** A service's methods (not reflected). */
  readonly methods?: object;
}

/** The scalar types a field may have. */
export type ScalarType =
  | "string"
  | "bytes"
  | "bool"
  | "int32"
  | "uint32"
  | "sint32"
  | "int64"
  | "uint64"
  | "sint64"
  | "fixed32"
  | "sfixed32"
  | "fixed64"
  | "sfixed64"
  | "float"
  | "double";

const SCALAR_TYPES: ReadonlySet<string> = new Set<ScalarType>([
  "string",
  "bytes",
  "bool",
  "int32",
  "uint32",
  "sint32",
  "int64",
  "uint64",
  "sint64",
  "fixed32",
  "sfixed32",
  "fixed64",
  "sfixed64",
  "float",
  "double",
]);

/** An enum type. */
export interface EnumType {
  readonly kind: "enum";
  /** Full name without a leading dot. */
  readonly fullName: string;
  readonly values: ReadonlyMap<string, number>;
  /** The value of the first name declared (protobuf's default). */
  readonly defaultValue: number;
}

/** What a field's (or a map's) value is. */
export type FieldValueType =
  | { readonly kind: "scalar"; readonly type: ScalarType }
  | EnumType
  | MessageType;

/** One field of a message type. */
export interface FieldInfo {
  /** The field name as the descriptor spells it. */
  readonly name: string;
  /** The field name as the `.proto` file spells it (for errors). */
  readonly protoName: string;
  readonly id: number;
  /** The oneof it is a member of (not the synthetic one of a proto3 `optional`). */
  readonly oneof: string | undefined;
  /** Written whenever set, even at its default: a oneof member or a proto3 `optional`. */
  readonly explicitPresence: boolean;
  /** Repeated (not a map). */
  readonly repeated: boolean;
  /** A map; the key type is `keyType`. */
  readonly map: boolean;
  readonly keyType: ScalarType | undefined;
  /** Repeated scalars written packed (proto3 default, or `[packed = true]`). */
  readonly packed: boolean;
  /** The element type (the map value for maps). */
  readonly value: FieldValueType;
}

/** A message type. Its fields resolve on first use, so recursive types work. */
export interface MessageType {
  readonly kind: "message";
  /** Full name without a leading dot. */
  readonly fullName: string;
  /** Fields in field-number order. */
  readonly fields: readonly FieldInfo[];
}

interface Entry {
  readonly fullName: string;
  readonly node: DescriptorNode;
  /** Syntax of the file: fields are packed by default unless proto2. */
  readonly proto2: boolean;
}

/**
 * The types of one JSON descriptor, by full name.
 *
 * @example Usage
 * ```ts
 * import { ProtoSchema } from "./schema.ts";
 * const schema = new ProtoSchema({
 *   nested: { demo: { nested: { Ping: { fields: { text: { type: "string", id: 1 } } } } } },
 * });
 * schema.message("demo.Ping").fields[0]?.name; // "text"
 * ```
 */
export class ProtoSchema {
  readonly #entries = new Map<string, Entry>();
  readonly #messages = new Map<string, MessageType>();
  readonly #enums = new Map<string, EnumType>();

  /** @param root The descriptor's root namespace. */
  constructor(root: DescriptorNode) {
    this.#index(root, "", false);
  }

  #index(node: DescriptorNode, prefix: string, proto2: boolean): void {
    for (const [name, child] of Object.entries(node.nested ?? {})) {
      const fullName = prefix === "" ? name : `${prefix}.${name}`;
      const childProto2 = child.edition === undefined ? proto2 : child.edition === "proto2";
      this.#entries.set(fullName, { fullName, node: child, proto2: childProto2 });
      this.#index(child, fullName, childProto2);
    }
  }

  /**
   * Looks up a message type.
   *
   * @param fullName Full name without a leading dot.
   * @returns The type.
   * @throws {TypeError} When the schema has no such message type.
   */
  message(fullName: string): MessageType {
    const known = this.#messages.get(fullName);
    if (known !== undefined) return known;
    const entry = this.#entries.get(fullName);
    if (entry === undefined || entry.node.fields === undefined) {
      throw new TypeError(`Cannot find message type "${fullName}" in the schema`);
    }
    const fields: FieldInfo[] = [];
    const type: MessageType = { kind: "message", fullName, fields };
    // Registered before its fields resolve, so a recursive reference finds it.
    this.#messages.set(fullName, type);
    const declared = Object.entries(entry.node.fields);
    declared.sort((a, b) => a[1].id - b[1].id);
    const oneofOf = new Map<string, string>();
    for (const [oneof, { oneof: members }] of Object.entries(entry.node.oneofs ?? {})) {
      for (const member of members) oneofOf.set(member, oneof);
    }
    for (const [name, field] of declared) {
      const synthetic = field.options?.proto3_optional === true;
      fields.push(this.#field(entry, name, field, synthetic ? undefined : oneofOf.get(name)));
    }
    return type;
  }

  #enum(entry: Entry): EnumType {
    const known = this.#enums.get(entry.fullName);
    if (known !== undefined) return known;
    const values = new Map(Object.entries(entry.node.values ?? {}));
    const first = values.values().next();
    const type: EnumType = {
      kind: "enum",
      fullName: entry.fullName,
      values,
      defaultValue: first.done ? 0 : first.value,
    };
    this.#enums.set(entry.fullName, type);
    return type;
  }

  #field(
    owner: Entry,
    name: string,
    field: DescriptorField,
    oneof: string | undefined,
  ): FieldInfo {
    const where = `${owner.fullName}.${name}`;
    const value = this.#resolve(owner.fullName, field.type, where);
    const map = field.keyType !== undefined;
    let keyType: ScalarType | undefined;
    if (map) {
      if (!SCALAR_TYPES.has(field.keyType!)) {
        throw new TypeError(`Cannot reflect "${where}": map key type "${field.keyType}"`);
      }
      keyType = field.keyType as ScalarType;
    }
    const repeated = !map && field.rule === "repeated";
    const packable = value.kind === "enum" ||
      (value.kind === "scalar" && value.type !== "string" && value.type !== "bytes");
    const packed = repeated && packable && (field.options?.packed ?? !owner.proto2);
    const explicitPresence = oneof !== undefined || field.options?.proto3_optional === true;
    return {
      name,
      protoName: field.protoName ?? name,
      id: field.id,
      oneof,
      explicitPresence,
      repeated,
      map,
      keyType,
      packed,
      value,
    };
  }

  #resolve(scope: string, typeName: string, where: string): FieldValueType {
    if (SCALAR_TYPES.has(typeName)) return { kind: "scalar", type: typeName as ScalarType };
    let found: Entry | undefined;
    if (typeName.startsWith(".")) {
      found = this.#entries.get(typeName.slice(1));
    } else {
      // Innermost scope first: the message itself, then each enclosing one.
      let prefix = scope;
      for (;;) {
        found = this.#entries.get(prefix === "" ? typeName : `${prefix}.${typeName}`);
        if (found !== undefined || prefix === "") break;
        const dot = prefix.lastIndexOf(".");
        prefix = dot < 0 ? "" : prefix.slice(0, dot);
      }
    }
    if (found?.node.values !== undefined) return this.#enum(found);
    if (found?.node.fields !== undefined) return this.message(found.fullName);
    throw new TypeError(`Cannot reflect "${where}": type "${typeName}" does not resolve`);
  }
}
