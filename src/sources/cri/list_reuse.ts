/**
 * Decoding a CRI list answer without decoding again the items the caller
 * already holds. A relist of 1000 pods reads about 3000 sandboxes and
 * containers, and in a quiet second none of them changed: the pod source
 * keeps the item it decoded when it first saw an ID, and throws the new copy
 * away whenever the state and creation time are the same (a CRI list item's
 * other fields, its metadata, labels, annotations and image, are fixed when it
 * is created). Decoding those copies was most of a relist's CPU and nearly
 * all of its garbage.
 *
 * So each listed item is first read for its ID, state and creation time only,
 * and the caller's `reuse` is asked for the item it holds under those three;
 * only the items it has none for are decoded in full. The result is what the
 * full decoder gives, with held items in place of equal fresh copies. Anything
 * the quick read does not expect (a wire type the schema does not give, bytes
 * that do not parse) sends that item, or the whole answer, to the full decoder,
 * so errors and odd encodings are handled exactly as before.
 *
 * @module
 */

import { ProtoReader } from "../../proto/proto_reader.ts";
import type { CriMessageCodec } from "./cri_codec.ts";

/** What identifies a list item's version: its ID, state and creation time. */
export type ReuseItem<T> = (id: string, state: number, createdAt: number) => T | undefined;

/**
 * The IDs of a list's last answer, in order, kept by whoever asks for the
 * list: an item whose ID is the one at its position last time (a quiet
 * runtime lists the same items in the same order) takes that string as it
 * is, not decoded again, and the caller's lookup by it hashes no new string.
 * Only a shortcut: a wrong guess costs a comparison.
 */
export class ListIds {
  /** The last answer's IDs. */
  last: readonly string[] = [];
}

/** Where an item message keeps the three fields (their field numbers). */
export interface ItemKeyFields {
  readonly id: number;
  readonly state: number;
  readonly createdAt: number;
}

/** `runtime.v1.PodSandbox`: id 1, state 3, created_at 4. */
export const POD_SANDBOX_KEY: ItemKeyFields = { id: 1, state: 3, createdAt: 4 };
/** `runtime.v1.Container`: id 1, state 6, created_at 7. */
export const CONTAINER_KEY: ItemKeyFields = { id: 1, state: 6, createdAt: 7 };

const WIRE_VARINT = 0;
const WIRE_LEN = 2;

/** The key last read: one holder, so that reading a key allocates nothing but the ID. */
const last = { id: "", state: 0, createdAt: 0 };

/**
 * Reads one item's key fields into `last`, the last occurrence of each
 * winning as in a full decode; false when a key field has another wire type
 * (the full decoder then decides what the item is).
 */
function readKey(r: ProtoReader, key: ItemKeyFields, guess: string | undefined): boolean {
  let id = "";
  let state = 0;
  let createdAt = 0;
  while (r.pos < r.len) {
    const tag = r.tag();
    const field = tag >>> 3;
    const wireType = tag & 7;
    if (field === key.id) {
      if (wireType !== WIRE_LEN) return false;
      id = r.stringLike(guess);
    } else if (field === key.state) {
      if (wireType !== WIRE_VARINT) return false;
      state = r.int32();
    } else if (field === key.createdAt) {
      if (wireType !== WIRE_VARINT) return false;
      createdAt = r.int64();
    } else r.skipType(wireType, 1, field);
  }
  last.id = id;
  last.state = state;
  last.createdAt = createdAt;
  return true;
}

/**
 * Decodes a list answer (`repeated <Item> <field> = listField`, nothing else),
 * reusing held items.
 *
 * @param bytes The answer.
 * @param listField The repeated field's number (1 in both CRI lists).
 * @param key Where the items keep their ID, state and creation time.
 * @param item The item type's codec.
 * @param reuse The caller's held item for an ID, state and creation time.
 * @param ids The IDs of the last answer, replaced by this one's when it is read.
 * @returns The items in order, or `undefined` when the answer is not the
 * plain shape this reads (the caller then decodes it in full).
 */
export function decodeListReusing<T>(
  bytes: Uint8Array,
  listField: number,
  key: ItemKeyFields,
  item: CriMessageCodec<T>,
  reuse: ReuseItem<T>,
  ids: ListIds = new ListIds(),
): T[] | undefined {
  const items: T[] = [];
  const guesses = ids.last;
  const read: string[] = [];
  const r = new ProtoReader(bytes);
  try {
    while (r.pos < r.len) {
      const tag = r.tag();
      if (tag >>> 3 !== listField || (tag & 7) !== WIRE_LEN) return undefined;
      const outer = r.enter();
      const start = r.pos;
      const end = r.len;
      const keyed = readKey(r, key, guesses[items.length]);
      r.pos = end;
      r.leave(outer);
      const held = keyed ? reuse(last.id, last.state, last.createdAt) : undefined;
      read.push(keyed ? last.id : "");
      items.push(held ?? item.decode(bytes.subarray(start, end)));
    }
  } catch {
    return undefined;
  }
  ids.last = read;
  return items;
}
