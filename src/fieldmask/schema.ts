/**
 * The shape of a JSON object as the field mask engine sees it: message types
 * with their JSON field names. Built from the protobuf descriptor by
 * `src/proto/`, handed here as plain data, so the mask engine never touches
 * protobuf reflection. Inline (embedded) Go structs are already flattened: a
 * `Volume`'s `configMap` is a field of `Volume`, as in JSON.
 *
 * @module
 */

/** How a field's value looks in JSON. */
export type FieldKind =
  /** A string, number or boolean, including Time, Quantity and IntOrString. */
  | "scalar"
  /** A nested object whose fields a path may walk into. */
  | "message"
  /** A map (`labels`, `resources.limits`): a path may stop here, not go in. */
  | "map";

/** One field of a message. */
export interface FieldSchema {
  readonly kind: FieldKind;
  /** A JSON array of values (a path walks into every element). */
  readonly repeated: boolean;
  /** The message type name when `kind` is `"message"`. */
  readonly type?: string;
}

/** The JSON fields of one message type. */
export interface MessageSchema {
  readonly fields: ReadonlyMap<string, FieldSchema>;
}

/** A set of message types and the one a mask starts from. */
export interface ObjectSchema {
  /** The type name of the top-level object (`k8s.io.api.core.v1.Pod`). */
  readonly root: string;
  readonly messages: ReadonlyMap<string, MessageSchema>;
}
