/**
 * The static pod source: the kubelet's `--pod-manifest-path` directory of pod
 * manifests, read the way the kubelet's file config source reads it.
 *
 * @module
 */

import type { Clock } from "../../clock.ts";
import type { Logger } from "../../log.ts";
import type { Metrics } from "../../metrics/metrics.ts";
import type { JsonObject } from "../../model/json.ts";
import { type PodSnapshot, snapshotOf } from "../../model/pod.ts";
import { type PolledSource, type SourceChanges, SourceUnavailableError } from "../mod.ts";
import { sameItems } from "../same_items.ts";
import {
  decodeManifest,
  ManifestError,
  type ManifestRejectReason,
  staticPod,
  staticPodName,
} from "./_manifest.ts";
import { SerialQueue } from "../../serial_queue.ts";
import { abortableSleep } from "../../sleep.ts";
import { rfc3339Nano } from "../../model/rfc3339.ts";
import { numericDefault } from "../../config_flags.ts";

/** What the source needs to know about a directory entry. */
export interface FsEntry {
  readonly name: string;
  readonly isFile: boolean;
  readonly isDirectory: boolean;
  readonly isSymlink: boolean;
}

/** What the source needs to know about a file (symlinks followed). */
export interface FsStat {
  readonly isFile: boolean;
  readonly isDirectory: boolean;
  readonly size: number;
  /** Modification time in ms since the epoch, `null` when unknown. */
  readonly mtimeMs: number | null;
}

/** The file system calls the source makes; tests inject a fake. */
export interface FsReader {
  /** @throws {Deno.errors.NotFound} When the directory does not exist. */
  readDir(path: string): Promise<readonly FsEntry[]>;
  /** Follows symlinks. @throws {Deno.errors.NotFound} When the path does not exist. */
  stat(path: string): Promise<FsStat>;
  readFile(path: string): Promise<Uint8Array>;
}

/** The real file system. */
export const denoFsReader: FsReader = {
  async readDir(path) {
    const entries: FsEntry[] = [];
    for await (const e of Deno.readDir(path)) entries.push(e);
    return entries;
  },
  async stat(path) {
    const info = await Deno.stat(path);
    return {
      isFile: info.isFile,
      isDirectory: info.isDirectory,
      size: info.size,
      mtimeMs: info.mtime?.getTime() ?? null,
    };
  },
  readFile: (path) => Deno.readFile(path),
};

/** Largest manifest file read, in bytes (the kubelet's limit is similar in spirit). */
export const DEFAULT_MAX_MANIFEST_BYTES = 1024 * 1024;

/** The kubelet's default `fileCheckFrequency`: rescan every 20 s. */
export const DEFAULT_RESCAN_MS = numericDefault("file-check-frequency");

/** Manifest file names read: the kubelet reads every non-hidden file; we keep to pod formats. */
const MANIFEST_NAME_REGEXP = /\.(ya?ml|json)$/i;

/** Options of {@linkcode StaticPodSource}. */
export interface StaticPodSourceOptions {
  /** The manifest directory (or a single manifest file), as `--pod-manifest-path`. */
  dir: string;
  /** The node's name: appended to pod names, set as `spec.nodeName`. */
  nodeName: string;
  /** Times `kubernetes.io/config.seen`. */
  clock: Clock;
  log: Logger;
  /** `sourceItemsRejected{source="static"}` counts skipped manifests. */
  metrics?: Pick<Metrics, "sourceItemsRejected">;
  /** The file system. @default {denoFsReader} */
  fs?: FsReader;
  /**
   * How often the directory should be fully rescanned, in ms: the relist
   * period the daemon gives this source (file events only make it earlier).
   * @default {DEFAULT_RESCAN_MS}
   */
  rescanMs?: number;
  /** Largest file read. @default {DEFAULT_MAX_MANIFEST_BYTES} */
  maxFileBytes?: number;
}

/** What the manifest path holds, as one read saw it. */
interface ManifestListing {
  /** The files to read, sorted by name. */
  readonly paths: readonly { readonly path: string; readonly isSymlink: boolean }[];
  /** The path does not exist (an empty source, logged once). */
  readonly missing: boolean;
}

/** One candidate pod of a file, before duplicates across files are removed. */
interface Candidate {
  readonly key: string;
  readonly uid: string;
  readonly snapshot: PodSnapshot;
}

interface FileRecord {
  readonly size: number;
  readonly mtimeMs: number | null;
  readonly hash: string;
  readonly candidates: readonly Candidate[];
  readonly errors: readonly ManifestError[];
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

async function sha256Hex(data: Uint8Array | string): Promise<string> {
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as BufferSource));
  let out = "";
  for (const b of digest) out += HEX[b];
  return out;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Serves the pods of a static manifest directory.
 *
 * Each `list()` reads the directory: every `*.yaml`, `*.yml` and `*.json`
 * file (hidden files and subdirectories are skipped, as the kubelet skips
 * them), each holding one or more pod documents. A pod gets the kubelet's
 * static pod treatment (see `_manifest.ts`) and a UID: the manifest's own
 * `metadata.uid` if it has one (the kubelet keeps it), else the first 32 hex
 * digits of a SHA-256 of the node name and the document's canonical JSON,
 * formatted like the kubelet's `kubernetes.io/config.hash`.
 *
 * That derived UID is not the kubelet's (the kubelet hashes its Go struct and
 * the file path; that cannot be reproduced here). When the kubelet starts the
 * pod, the runtime (and the kubelet's `/pods`) report it under the kubelet's
 * UID, and the merger ({@linkcode PodMerger}) serves the pod under that UID
 * from then on: watchers see the derived UID DELETED and the kubelet's UID
 * ADDED, as for any pod that is replaced. Editing a manifest gives a new UID,
 * just as the kubelet replaces the pod.
 *
 * A broken file (bad YAML, not a Pod, invalid pod, duplicate name, larger
 * than `maxFileBytes`, binary, unreadable, a symlink loop) is logged once,
 * counted in `sourceItemsRejected{source="static",reason}` and skipped; the
 * other files are still served, and a fixed file is picked up by the next
 * read. Files are small (at most `maxFileBytes`) and few, so each read
 * hashes every file's bytes; a file whose bytes did not change is not parsed
 * again and gives the very same snapshot objects (so does an unchanged
 * document of an edited file). Modification times are not trusted: a rewrite
 * within one time-stamp tick would keep them. A missing
 * directory is an empty source (logged once), as for the kubelet.
 *
 * @example Usage
 * ```ts ignore
 * import { StaticPodSource } from "./static_source.ts";
 * import { systemClock } from "../../clock.ts";
 * import { silentLogger } from "../../log.ts";
 * const source = new StaticPodSource({
 *   dir: "/etc/kubernetes/manifests",
 *   nodeName: "node-1",
 *   clock: systemClock,
 *   log: silentLogger,
 * });
 * const pods = await source.list(AbortSignal.timeout(5000));
 * ```
 */
export class StaticPodSource implements PolledSource {
  /** Always `"static"`. */
  readonly kind = "static" as const;
  /** The rescan period (ms) this source should be relisted at. */
  readonly rescanMs: number;
  /** Same as `rescanMs`: the period the daemon relists this source at. */
  readonly periodMs: number;
  readonly #dir: string;
  readonly #nodeName: string;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #metrics: StaticPodSourceOptions["metrics"];
  readonly #fs: FsReader;
  readonly #maxBytes: number;
  #files = new Map<string, FileRecord>();
  /** Snapshots of the last list by content key, for reuse across file edits. */
  #byContent = new Map<string, PodSnapshot>();
  /** Problems reported at the last list (each reported once while it lasts). */
  #reported = new Set<string>();
  #missingLogged = false;
  #last: PodSnapshot[] = [];
  /** Reads run one at a time, each on the state the one before committed. */
  readonly #reads = new SerialQueue();

  /**
   * @param options Directory, node name, clock, log, metrics, file system.
   * @throws {TypeError} When `dir` or `nodeName` is empty.
   * @throws {RangeError} When `rescanMs` or `maxFileBytes` is not positive.
   */
  constructor(options: StaticPodSourceOptions) {
    if (options.dir === "") {
      throw new TypeError("Cannot read static pods: the manifest path is empty");
    }
    if (options.nodeName === "") {
      throw new TypeError("Cannot read static pods: the node name is empty");
    }
    const rescanMs = options.rescanMs ?? DEFAULT_RESCAN_MS;
    const maxBytes = options.maxFileBytes ?? DEFAULT_MAX_MANIFEST_BYTES;
    for (const [name, value] of [["rescanMs", rescanMs], ["maxFileBytes", maxBytes]] as const) {
      if (!Number.isFinite(value) || value <= 0) {
        throw new RangeError(
          `Cannot read static pods with ${name} "${value}": it must be positive`,
        );
      }
    }
    this.rescanMs = rescanMs;
    this.periodMs = rescanMs;
    this.#dir = options.dir.replace(/\/+$/, "") || "/";
    this.#nodeName = options.nodeName;
    this.#clock = options.clock;
    this.#log = options.log;
    this.#metrics = options.metrics;
    this.#fs = options.fs ?? denoFsReader;
    this.#maxBytes = maxBytes;
  }

  /**
   * Reads every manifest and returns the pods. Calls run one at a time, in
   * order; a file removed between the directory listing and its read is
   * left out without a warning (it is being deleted).
   *
   * @param signal Abandons the read; an abandoned read changes nothing.
   * @returns The static pods, sorted by file name then document order.
   * @throws {SourceUnavailableError} When the directory exists but cannot be read.
   */
  list(signal: AbortSignal): Promise<readonly PodSnapshot[]> {
    return this.#reads.run(() => this.#list(signal));
  }

  /**
   * One read. Everything it learns is kept in locals and committed to the
   * source's state in one synchronous step at the end, and only when the
   * read was not given up on: a read abandoned half-way leaves no trace.
   */
  async #list(signal: AbortSignal): Promise<readonly PodSnapshot[]> {
    signal.throwIfAborted();
    const listing = await this.#manifestPaths();
    const files = new Map<string, FileRecord>();
    const problems: { key: string; error: ManifestError; path: string }[] = [];
    for (const { path, isSymlink } of listing.paths) {
      signal.throwIfAborted();
      const record = await this.#readFile(path, isSymlink);
      // Listed, then removed before it could be read: the file is not there.
      if (record === undefined) continue;
      files.set(path, record);
      record.errors.forEach((error, i) =>
        problems.push({ key: `${path}#${i}#${record.hash}`, error, path })
      );
    }
    // Duplicates across files: the first file (by name) wins, as the kubelet keeps the first.
    const seenNames = new Set<string>();
    const seenUids = new Set<string>();
    const out: PodSnapshot[] = [];
    const byContent = new Map<string, PodSnapshot>();
    for (const [path, record] of files) {
      for (const c of record.candidates) {
        const pod = c.snapshot.pod.metadata;
        const name = `${pod.namespace}/${pod.name}`;
        if (seenNames.has(name) || seenUids.has(c.uid)) {
          const what = seenNames.has(name) ? `name "${name}"` : `UID "${c.uid}"`;
          problems.push({
            key: `${path}#dup#${c.key}`,
            path,
            error: new ManifestError(
              `Cannot use pod in manifest "${path}": its ${what} is already used by another manifest`,
              "duplicate_name",
            ),
          });
          continue;
        }
        seenNames.add(name);
        seenUids.add(c.uid);
        out.push(c.snapshot);
        byContent.set(c.key, c.snapshot);
      }
    }
    signal.throwIfAborted();
    // Commit: nothing above changed the source's state.
    if (listing.missing && !this.#missingLogged) {
      this.#log.info("static pod manifest path does not exist; serving no static pods", {
        dir: this.#dir,
      });
    }
    this.#missingLogged = listing.missing;
    this.#files = files;
    this.#byContent = byContent;
    this.#report(problems);
    if (sameItems(out, this.#last)) {
      return this.#last;
    }
    this.#last = out;
    return out;
  }

  /**
   * {@linkcode StaticPodSource.watch} with the default retry timer: the
   * source's change capability as {@linkcode PolledSource} declares it.
   *
   * @param signal Stops watching.
   * @param changes Told to relist after each file event.
   * @returns Resolves once the signal aborts.
   */
  watchChanges(signal: AbortSignal, changes: SourceChanges): Promise<void> {
    return this.watch(signal, () => changes.relist());
  }

  /**
   * Watches the directory and calls `onChange` when something in it changes,
   * so the daemon can relist early; the periodic relist remains the safety
   * net (events can be lost, and a missing directory cannot be watched: the
   * watch is retried every `rescanMs`).
   *
   * @param signal Stops watching.
   * @param onChange Called after each file event (a relist is idempotent, so a
   *   burst of events costs at most a few cheap rereads of unchanged files).
   * @param options `sleep` between retries; tests inject a fake.
   * @returns Resolves once the signal aborts.
   */
  async watch(
    signal: AbortSignal,
    onChange: () => void,
    options: { sleep?: (ms: number, signal: AbortSignal) => Promise<void> } = {},
  ): Promise<void> {
    const sleep = options.sleep ?? abortableSleep;
    while (!signal.aborted) {
      let watcher: Deno.FsWatcher | undefined;
      try {
        watcher = Deno.watchFs(this.#dir, { recursive: false });
        const close = () => watcher?.close();
        signal.addEventListener("abort", close, { once: true });
        try {
          for await (const event of watcher) {
            if (event.kind === "access") continue;
            onChange();
          }
        } finally {
          signal.removeEventListener("abort", close);
        }
      } catch (error) {
        if (signal.aborted) break;
        this.#log.debug("cannot watch manifest directory, relying on rescans", {
          dir: this.#dir,
          error,
        });
      } finally {
        try {
          watcher?.close();
        } catch {
          // already closed
        }
      }
      if (!signal.aborted) await sleep(this.rescanMs, signal);
    }
  }

  async #manifestPaths(): Promise<ManifestListing> {
    let info: FsStat;
    try {
      info = await this.#fs.stat(this.#dir);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return { paths: [], missing: true };
      throw new SourceUnavailableError(
        `Cannot read static pod manifest path "${this.#dir}": ${errorText(error)}`,
        { reason: "unreadable", cause: error },
      );
    }
    // The kubelet also accepts a single manifest file as the path.
    if (info.isFile) return { paths: [{ path: this.#dir, isSymlink: false }], missing: false };
    if (!info.isDirectory) return { paths: [], missing: false };
    let entries: readonly FsEntry[];
    try {
      entries = await this.#fs.readDir(this.#dir);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return { paths: [], missing: true };
      throw new SourceUnavailableError(
        `Cannot list static pod manifest directory "${this.#dir}": ${errorText(error)}`,
        { reason: "unreadable", cause: error },
      );
    }
    const prefix = this.#dir === "/" ? "" : this.#dir;
    const paths = entries
      .filter((e) => !e.name.startsWith(".") && !e.isDirectory && MANIFEST_NAME_REGEXP.test(e.name))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map((e) => ({ path: `${prefix}/${e.name}`, isSymlink: e.isSymlink }));
    return { paths, missing: false };
  }

  /**
   * Reads one listed file.
   *
   * @returns Its record, or `undefined` when it is gone (removed since the
   * directory was listed: a file being deleted is simply not there).
   */
  async #readFile(path: string, isSymlink: boolean): Promise<FileRecord | undefined> {
    const previous = this.#files.get(path);
    const failed = (error: ManifestError, hash = ""): FileRecord => ({
      size: -1,
      mtimeMs: null,
      hash,
      candidates: [],
      errors: [error],
    });
    let info: FsStat;
    try {
      info = await this.#fs.stat(path);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) {
        // A symlink to nothing stays broken until someone fixes it: worth a warning.
        if (isSymlink) {
          return failed(
            new ManifestError(
              `Cannot read manifest "${path}": the symlink's target does not exist`,
              "unreadable",
            ),
          );
        }
        return this.#vanished(path);
      }
      return failed(
        new ManifestError(`Cannot read manifest "${path}": ${errorText(error)}`, "unreadable"),
      );
    }
    if (info.isDirectory) {
      return { size: 0, mtimeMs: null, hash: "dir", candidates: [], errors: [] };
    }
    if (!info.isFile) {
      return failed(
        new ManifestError(`Cannot read manifest "${path}": it is not a regular file`, "unreadable"),
      );
    }
    if (info.size > this.#maxBytes) {
      return failed(
        new ManifestError(
          `Cannot read manifest "${path}": ${info.size} bytes is more than the limit of ${this.#maxBytes}`,
          "too_large",
        ),
        `size:${info.size}`,
      );
    }
    let bytes: Uint8Array;
    try {
      bytes = await this.#fs.readFile(path);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return this.#vanished(path);
      return failed(
        new ManifestError(`Cannot read manifest "${path}": ${errorText(error)}`, "unreadable"),
      );
    }
    if (bytes.length > this.#maxBytes) {
      return failed(
        new ManifestError(
          `Cannot read manifest "${path}": it grew past ${this.#maxBytes} bytes`,
          "too_large",
        ),
      );
    }
    const hash = await sha256Hex(bytes);
    if (previous !== undefined && previous.hash === hash) {
      return { ...previous, size: info.size, mtimeMs: info.mtimeMs };
    }
    return await this.#parse(path, bytes, hash, info);
  }

  #vanished(path: string): undefined {
    this.#log.debug("static pod manifest removed while the directory was read", { file: path });
    return undefined;
  }

  async #parse(path: string, bytes: Uint8Array, hash: string, info: FsStat): Promise<FileRecord> {
    let docs;
    try {
      docs = decodeManifest(bytes, path);
    } catch (error) {
      const e = error instanceof ManifestError
        ? error
        : new ManifestError(`Cannot parse manifest "${path}": ${errorText(error)}`, "bad_yaml");
      return { size: info.size, mtimeMs: info.mtimeMs, hash, candidates: [], errors: [e] };
    }
    const candidates: Candidate[] = [];
    const errors: ManifestError[] = [];
    const seen = rfc3339Nano(this.#clock.now());
    for (const doc of docs) {
      if (!doc.ok) {
        errors.push(doc.error);
        continue;
      }
      const key = `${this.#nodeName}\n${doc.canonical}`;
      const metadata = doc.pod.metadata as JsonObject;
      const own = typeof metadata.uid === "string" && metadata.uid !== ""
        ? metadata.uid
        : undefined;
      const uid = own ?? (await sha256Hex(`host:${this.#nodeName}\n${doc.canonical}`)).slice(0, 32);
      const reused = this.#byContent.get(key);
      const snapshot = reused ??
        snapshotOf(staticPod(doc.pod, { nodeName: this.#nodeName, uid, seen }));
      candidates.push({ key, uid, snapshot });
    }
    return { size: info.size, mtimeMs: info.mtimeMs, hash, candidates, errors };
  }

  #report(problems: readonly { key: string; error: ManifestError; path: string }[]): void {
    const now = new Set<string>();
    for (const { key, error, path } of problems) {
      now.add(key);
      if (this.#reported.has(key)) continue;
      this.#metrics?.sourceItemsRejected.inc({ source: "static", reason: error.reason });
      this.#log.warn("skipping static pod manifest", {
        file: path,
        reason: error.reason,
        error: error.message,
      });
    }
    this.#reported = now;
  }
}

export { staticPodName };
export type { ManifestRejectReason };
