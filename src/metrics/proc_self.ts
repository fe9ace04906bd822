/**
 * The process's own figures from Linux's `/proc/self`: memory from `status`,
 * the descriptor limit from `limits`, open descriptors from `fd`. Deno lets a
 * program read `/proc/self` only under `--allow-all`; under the daemon's
 * scoped permissions (and off Linux) {@linkcode openProcSelf} says so and the
 * metrics that need it are not exported, rather than exported as 0.
 *
 * @module
 */

/** Reads files under `/proc/self` (injected in tests). */
export interface ProcReader {
  /** @returns The text of a file such as `/proc/self/status`. */
  readText(path: string): string;
  /** @returns How many entries a directory such as `/proc/self/fd` holds. */
  countEntries(path: string): number;
}

/** Memory of the process from `/proc/self/status`, in bytes. */
export interface ProcMemory {
  /** `VmRSS`: resident set size. */
  readonly residentBytes: number;
  /** `VmSize`: virtual memory size. */
  readonly virtualBytes: number;
  /** `VmData`: data segment (heap) size. */
  readonly heapBytes: number;
}

/** Reads `/proc/self` with Deno's file APIs. */
export const denoProcReader: ProcReader = {
  readText: (path) => Deno.readTextFileSync(path),
  countEntries: (path) => {
    let n = 0;
    for (const _ of Deno.readDirSync(path)) n++;
    return n;
  },
};

/**
 * Parses the memory lines of `/proc/self/status`.
 *
 * @example Usage
 * ```ts
 * import { parseProcStatus } from "./proc_self.ts";
 * parseProcStatus("VmSize:\t 4 kB\nVmRSS:\t 2 kB\nVmData:\t 1 kB\n").residentBytes; // 2048
 * ```
 *
 * @param text The file's text.
 * @returns Resident, virtual and heap bytes.
 * @throws {SyntaxError} When a line is missing (not Linux's format).
 */
export function parseProcStatus(text: string): ProcMemory {
  const kib = (field: string): number => {
    const match = new RegExp(`^${field}:\\s*(\\d+) kB$`, "m").exec(text);
    if (match === null) throw new SyntaxError(`Cannot find "${field}" in /proc/self/status`);
    return Number(match[1]) * 1024;
  };
  return { residentBytes: kib("VmRSS"), virtualBytes: kib("VmSize"), heapBytes: kib("VmData") };
}

/**
 * Parses the soft limit of open files from `/proc/self/limits`.
 *
 * @param text The file's text.
 * @returns The limit, or `undefined` when it is `unlimited` or missing.
 */
export function parseMaxOpenFiles(text: string): number | undefined {
  const match = /^Max open files\s+(\d+)\s/m.exec(text);
  return match === null ? undefined : Number(match[1]);
}

/**
 * Checks once that `/proc/self` can be read.
 *
 * @param reader How to read it.
 * @returns The reader when `/proc/self/status` reads as Linux's; `undefined` otherwise
 *   (not Linux, or not permitted: Deno asks for `--allow-all`).
 */
export function openProcSelf(reader: ProcReader = denoProcReader): ProcReader | undefined {
  try {
    parseProcStatus(reader.readText("/proc/self/status"));
    return reader;
  } catch {
    return undefined;
  }
}
