/**
 * A minimal POSIX ustar writer for the image build (private to
 * `scripts/image.ts`): directories, regular files and symbolic links, owner
 * and times fixed, so the same inputs always give the same bytes (and the
 * same image digests). No long-name extensions: a path that does not fit
 * ustar's 100 + 155 bytes is an error, never silently cut.
 *
 * @module
 */

const ENCODER = new TextEncoder();
const BLOCK = 512;

/** One entry of a tar archive; `owner`, when given, is this entry's own. */
export type TarEntry =
  | {
    readonly type: "dir";
    readonly path: string;
    readonly mode: number;
    readonly owner?: TarOwner;
  }
  | {
    readonly type: "file";
    readonly path: string;
    readonly mode: number;
    readonly data: Uint8Array;
    readonly owner?: TarOwner;
  }
  | { readonly type: "symlink"; readonly path: string; readonly target: string };

/** Owner of every entry (numeric; names are left empty, as `--numeric-owner`). */
export interface TarOwner {
  readonly uid: number;
  readonly gid: number;
}

function octal(value: number, width: number): string {
  return value.toString(8).padStart(width - 1, "0") + "\0";
}

function put(header: Uint8Array, offset: number, width: number, text: string): void {
  const bytes = ENCODER.encode(text);
  if (bytes.length > width) throw new RangeError(`Cannot write tar field "${text}": too long`);
  header.set(bytes, offset);
}

/** Splits a path into ustar's prefix and name fields. */
function splitPath(path: string): { prefix: string; name: string } {
  const bytes = ENCODER.encode(path).length;
  if (bytes <= 100) return { prefix: "", name: path };
  for (let i = path.indexOf("/"); i !== -1; i = path.indexOf("/", i + 1)) {
    const prefix = path.slice(0, i);
    const name = path.slice(i + 1);
    if (ENCODER.encode(prefix).length <= 155 && ENCODER.encode(name).length <= 100) {
      return { prefix, name };
    }
  }
  throw new RangeError(`Cannot store "${path}" in a ustar archive: path too long`);
}

/**
 * The 512-byte header of one entry.
 *
 * @param entry The entry (its data only counts for the size).
 * @param owner Numeric owner of the entry, unless the entry names its own.
 * @returns The header block.
 * @throws {RangeError} When the path or link target does not fit.
 */
export function tarHeader(entry: TarEntry, owner: TarOwner = { uid: 0, gid: 0 }): Uint8Array {
  const header = new Uint8Array(BLOCK);
  const path = entry.type === "dir" && !entry.path.endsWith("/") ? `${entry.path}/` : entry.path;
  const { prefix, name } = splitPath(path);
  const size = entry.type === "file" ? entry.data.length : 0;
  const mode = entry.type === "symlink" ? 0o777 : entry.mode;
  const { uid, gid } = (entry.type !== "symlink" ? entry.owner : undefined) ?? owner;
  put(header, 0, 100, name);
  put(header, 100, 8, octal(mode, 8));
  put(header, 108, 8, octal(uid, 8));
  put(header, 116, 8, octal(gid, 8));
  put(header, 124, 12, octal(size, 12));
  put(header, 136, 12, octal(0, 12));
  put(header, 148, 8, "        ");
  put(header, 156, 1, entry.type === "dir" ? "5" : entry.type === "symlink" ? "2" : "0");
  if (entry.type === "symlink") put(header, 157, 100, entry.target);
  put(header, 257, 6, "ustar\0");
  put(header, 263, 2, "00");
  put(header, 345, 155, prefix);
  let sum = 0;
  for (const byte of header) sum += byte;
  put(header, 148, 8, sum.toString(8).padStart(6, "0") + "\0 ");
  return header;
}

/** Zero bytes that pad `size` bytes of data to a whole block. */
export function tarPadding(size: number): Uint8Array {
  return new Uint8Array((BLOCK - (size % BLOCK)) % BLOCK);
}

/** The two zero blocks that end an archive. */
export const TAR_END: Uint8Array = new Uint8Array(2 * BLOCK);

/**
 * A whole archive in memory (for image layers: each is hashed as a whole).
 *
 * @example Usage
 * ```ts
 * import { tarArchive } from "./_tar.ts";
 * const tar = tarArchive([{ type: "dir", path: "etc", mode: 0o755 }]);
 * ```
 *
 * @param entries The entries, in the order to write them.
 * @param owner Numeric owner of every entry that does not name its own.
 * @returns The archive's bytes.
 * @throws {RangeError} When a path or link target does not fit.
 */
export function tarArchive(entries: readonly TarEntry[], owner?: TarOwner): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const entry of entries) {
    parts.push(tarHeader(entry, owner));
    if (entry.type === "file") parts.push(entry.data, tarPadding(entry.data.length));
  }
  parts.push(TAR_END);
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}
