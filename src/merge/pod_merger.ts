/**
 * Merges the views of several pod sources into one, keyed by pod UID, the
 * way the kubelet combines its pod sources (spec) with the runtime (status):
 * spec and metadata come from the richest source that has the pod (the
 * kubelet's Pods API, then the API server, then the kubelet's `/pods`, then a
 * static manifest, then the fake source, then CRI; DESIGN.md §17: the API
 * server's spec and metadata, the runtime's status for what the runtime
 * knows), status is rebuilt from the runtime when the runtime has the pod
 * (see `overlayStatus()` in `src/status/`), and otherwise is the source's own.
 *
 * The kubelet's Pods API is the exception (DESIGN.md §16): its status is the
 * kubelet's own word and is served as it is while the kubelet answers. While
 * it does not (its view comes `held`), the kubelet's last status stays
 * until the runtime shows a change, and is then rebuilt from the runtime. A
 * pod the kubelet deleted leaves at once, even while the runtime still tears
 * it down; one the kubelet never listed stays as the runtime shows it.
 *
 * @module
 */

import type { JsonObject } from "../model/json.ts";
import { isJsonObject } from "../model/json.ts";
import type { PodObject, PodSnapshot, PodUid } from "../model/pod.ts";
import { CONFIG_ANNOTATION } from "../model/kubelet_keys.ts";
import { type PodSourceKind, SPEC_ORDER, traitsOf } from "../model/pod_source_kind.ts";
import { isTerminalPhase, overlayStatus } from "../status/mod.ts";

/** The slots (indexes into {@linkcode SPEC_ORDER}) of the kinds whose trait holds. */
function slotsWhere(holds: (kind: PodSourceKind) => boolean): number[] {
  return SPEC_ORDER.flatMap((kind, slot) => holds(kind) ? [slot] : []);
}

/** The runtime's slot: its status is overlaid onto the others'. */
const RUNTIME = slotsWhere((k) => traitsOf(k).status === "runtime")[0]!;
/** Slots whose status is their own word, and whose deletions are final. */
const AUTHORITIES = slotsWhere((k) => traitsOf(k).status === "own");
/** Slots whose UIDs are made up here and give way to a lent one. */
const BORROWERS = slotsWhere((k) => traitsOf(k).borrowsUid);
/**
 * Views whose static pods (the kubelet's, mirror pods for the API server)
 * can lend a static pod its UID, in their lending order.
 */
const UID_LENDERS = slotsWhere((k) => traitsOf(k).lendsUidRank !== undefined)
  .sort((a, b) => traitsOf(SPEC_ORDER[a]!).lendsUidRank! - traitsOf(SPEC_ORDER[b]!).lendsUidRank!);

/** A pod's inputs, one slot per kind of {@linkcode SPEC_ORDER}. */
type Inputs = readonly (PodSnapshot | undefined)[];

interface View {
  readonly list: readonly PodSnapshot[];
  /** The source does not answer: its statuses are as it last said, no longer news. */
  readonly held: boolean;
  readonly byUid: ReadonlyMap<PodUid, PodSnapshot>;
  /** Pods that carry static-pod annotations, by `namespace/name`. */
  readonly staticByName: ReadonlyMap<string, readonly PodSnapshot[]>;
}

interface Entry {
  readonly inputs: Inputs;
  /** The status authority's view was held when the entry was made. */
  readonly held: boolean;
  readonly output: PodSnapshot;
  /** The runtime's snapshot when the status authority last spoke of the pod live. */
  readonly runtimeAtLive?: PodSnapshot | undefined;
}

const EMPTY_VIEW: View = { list: [], held: false, byUid: new Map(), staticByName: new Map() };

function annotationsOf(pod: Readonly<PodObject>): Readonly<Record<string, string>> {
  const annotations = pod.metadata.annotations;
  return isJsonObject(annotations) ? annotations : {};
}

/**
 * Reports whether a pod (from the kubelet or the runtime) is a static pod the
 * kubelet read from a manifest file.
 *
 * @param pod A pod.
 * @returns `true` when its config annotations say so.
 */
export function isStaticPod(pod: Readonly<PodObject>): boolean {
  const annotations = annotationsOf(pod);
  const source = annotations[CONFIG_ANNOTATION.source];
  if (source !== undefined) return source === "file";
  return typeof annotations[CONFIG_ANNOTATION.hash] === "string";
}

function nameKey(pod: Readonly<PodObject>): string {
  return `${pod.metadata.namespace}/${pod.metadata.name}`;
}

function makeView(list: readonly PodSnapshot[], held: boolean, indexStatic: boolean): View {
  const byUid = new Map<PodUid, PodSnapshot>();
  for (const snapshot of list) byUid.set(snapshot.uid, snapshot);
  const staticByName = new Map<string, PodSnapshot[]>();
  if (indexStatic) {
    for (const snapshot of byUid.values()) {
      if (!isStaticPod(snapshot.pod)) continue;
      const key = nameKey(snapshot.pod);
      const found = staticByName.get(key);
      if (found === undefined) staticByName.set(key, [snapshot]);
      else found.push(snapshot);
    }
  }
  return { list, held, byUid, staticByName };
}

function created(snapshot: PodSnapshot): string {
  const at = snapshot.pod.metadata.creationTimestamp;
  return typeof at === "string" ? at : "";
}

/** The newest of several runtime pods of one static pod (the current attempt). */
function newest(candidates: readonly PodSnapshot[]): PodSnapshot {
  let best = candidates[0]!;
  for (const c of candidates) {
    const a = created(c);
    const b = created(best);
    if (a > b || (a === b && c.uid > best.uid)) best = c;
  }
  return best;
}

function sameInputs(a: Inputs, b: Inputs): boolean {
  for (let i = 0; i < SPEC_ORDER.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Combines the latest view of each pod source into the node's pods.
 *
 * Static pods: the kubelet's UID of a static pod is a hash of its Go struct
 * that cannot be computed here, so the static source makes its own. When the
 * kubelet's `/pods`, the API server (a mirror pod, which the API server
 * source keys by its `kubernetes.io/config.mirror` hash) or the runtime has a
 * static pod of the same namespace and name (`kubernetes.io/config.source:
 * file`, or a `kubernetes.io/config.hash` annotation), the merged pod takes
 * that UID: the kubelet's first, then the API server's, else the newest
 * runtime pod's. A static pod served before the kubelet started it
 * therefore changes UID once it starts (watchers see the derived UID DELETED
 * and the kubelet's UID ADDED), exactly as a pod replaced by a new one.
 *
 * A pod leaves the merged view when no source and not the runtime has it,
 * or at once when the kubelet's Pods API deletes it. Unchanged pods (none of their inputs is a new object) are returned as
 * the very same snapshot objects as last time.
 *
 * @example Usage
 * ```ts
 * import { PodMerger } from "./pod_merger.ts";
 * const merger = new PodMerger();
 * const pod = { metadata: { uid: "u1", name: "web", namespace: "default" } };
 * const view = merger.update("cri", [{ uid: "u1", pod }]);
 * console.assert(view.length === 1 && view[0]!.pod === pod);
 * ```
 */
export class PodMerger {
  #views: View[] = SPEC_ORDER.map(() => EMPTY_VIEW);
  #entries = new Map<PodUid, Entry>();
  #last: PodSnapshot[] = [];
  /** Pods a status authority deleted that another source (the runtime) still has. */
  #deleted = new Set<PodUid>();

  /**
   * Stores a source's latest full view and returns the merged view.
   *
   * @param kind Which source the view is from.
   * @param snapshots Every pod the source has now (for a repeated UID the last counts).
   * @param held The source does not answer and this is its view as it last said: a
   *   status authority's statuses then give way to the runtime's next change.
   * @returns Every merged pod, each once.
   * @throws {RangeError} When `kind` is not a known source kind.
   */
  update(kind: PodSourceKind, snapshots: readonly PodSnapshot[], held = false): PodSnapshot[] {
    const slot = SPEC_ORDER.indexOf(kind);
    if (slot < 0) throw new RangeError(`Cannot merge pods of source kind "${kind}"`);
    const before = this.#views[slot]!;
    if (before.list === snapshots && before.held === held) return this.#last;
    const view = makeView(snapshots, held, UID_LENDERS.includes(slot));
    this.#views[slot] = view;
    if (AUTHORITIES.includes(slot)) {
      // An authority's view only ever loses a pod it deleted (DELETED, or gone from a new list).
      for (const uid of before.byUid.keys()) {
        if (!view.byUid.has(uid)) this.#deleted.add(uid);
      }
      for (const uid of view.byUid.keys()) this.#deleted.delete(uid);
    }
    return this.#merge();
  }

  /** @returns The merged view of the last update. */
  current(): readonly PodSnapshot[] {
    return this.#last;
  }

  /**
   * @param uid A merged pod's UID.
   * @returns The kinds of the sources whose last views have the pod (none for an unknown UID).
   */
  sourcesOf(uid: PodUid): PodSourceKind[] {
    const inputs = this.#entries.get(uid)?.inputs;
    return inputs === undefined ? [] : SPEC_ORDER.filter((_, i) => inputs[i] !== undefined);
  }

  /** Groups every known pod's inputs under its merged UID. */
  #group(): Map<PodUid, (PodSnapshot | undefined)[]> {
    const groups = new Map<PodUid, (PodSnapshot | undefined)[]>();
    const put = (uid: PodUid, slot: number, snapshot: PodSnapshot) => {
      let inputs = groups.get(uid);
      if (inputs === undefined) groups.set(uid, inputs = SPEC_ORDER.map(() => undefined));
      inputs[slot] = snapshot;
    };
    const views = this.#views;
    views.forEach((view, slot) => {
      if (BORROWERS.includes(slot)) return;
      for (const [uid, snapshot] of view.byUid) put(uid, slot, snapshot);
    });
    for (const slot of BORROWERS) {
      for (const [uid, snapshot] of views[slot]!.byUid) {
        put(this.#lentUid(uid, snapshot), slot, snapshot);
      }
    }
    for (const uid of this.#deleted) {
      // Deleted at once; forgotten once no source has it any more.
      if (!groups.delete(uid)) this.#deleted.delete(uid);
    }
    return groups;
  }

  /** The UID a borrowing source's (a manifest's) pod is served under. */
  #lentUid(uid: PodUid, snapshot: PodSnapshot): PodUid {
    const views = this.#views;
    // The manifest named its own UID (the kubelet keeps it), or it matches already.
    if (views.some((v, slot) => !BORROWERS.includes(slot) && v.byUid.has(uid))) return uid;
    const key = nameKey(snapshot.pod);
    for (const slot of UID_LENDERS) {
      const found = views[slot]!.staticByName.get(key);
      if (found !== undefined) return newest(found).uid;
    }
    return uid;
  }

  #merge(): PodSnapshot[] {
    const groups = this.#group();
    const entries = new Map<PodUid, Entry>();
    const out: PodSnapshot[] = [];
    let changed = groups.size !== this.#entries.size;
    for (const [uid, inputs] of groups) {
      const previous = this.#entries.get(uid);
      let entry: Entry;
      const held = this.#heldBase(inputs);
      if (previous !== undefined && previous.held === held && sameInputs(previous.inputs, inputs)) {
        entry = previous;
      } else {
        entry = mergeEntry(uid, inputs, held, previous);
        if (entry.output !== previous?.output) changed = true;
      }
      entries.set(uid, entry);
      out.push(entry.output);
    }
    this.#entries = entries;
    if (changed) this.#last = out;
    return this.#last;
  }

  /** Whether a pod's base is a status authority whose view is held. */
  #heldBase(inputs: Inputs): boolean {
    const slot = inputs.findIndex((s) => s !== undefined);
    return AUTHORITIES.includes(slot) && this.#views[slot]!.held;
  }
}

function phaseOf(pod: Readonly<PodObject> | undefined): unknown {
  return isJsonObject(pod?.status) ? pod.status.phase : undefined;
}

/**
 * One pod's merged entry. With a status authority (the kubelet's Pods API)
 * as the base, its status is served as it is while it answers, and while it
 * does not (`held`), until the runtime's view of the pod changes.
 */
function mergeEntry(
  uid: PodUid,
  inputs: Inputs,
  held: boolean,
  previous: Entry | undefined,
): Entry {
  const slot = inputs.findIndex((s) => s !== undefined);
  if (!AUTHORITIES.includes(slot)) {
    return { inputs, held, output: mergeOne(uid, inputs, previous?.output) };
  }
  const runtime = inputs[RUNTIME];
  const runtimeAtLive = held ? previous?.runtimeAtLive : runtime;
  const runtimeMoved = held && runtime !== undefined && runtime !== runtimeAtLive;
  return {
    inputs,
    held,
    runtimeAtLive,
    output: mergeOne(uid, inputs, previous?.output, runtimeMoved),
  };
}

/**
 * @param overlayRuntime Rebuild status from the runtime when it has the pod
 *   (not when the base's status is the kubelet's own word).
 */
function mergeOne(
  uid: PodUid,
  inputs: Inputs,
  previous: PodSnapshot | undefined,
  overlayRuntime = true,
): PodSnapshot {
  const present = inputs.filter((s): s is PodSnapshot => s !== undefined);
  const base = present[0]!;
  const runtime = inputs[RUNTIME];
  // The runtime removed a finished pod before the source (polled less often)
  // caught up: its older status would undo the terminal phase already served.
  if (
    runtime === undefined && isTerminalPhase(phaseOf(previous?.pod)) &&
    !isTerminalPhase(phaseOf(base.pod))
  ) {
    return {
      uid,
      pod: { ...base.pod, metadata: { ...base.pod.metadata, uid }, status: previous!.pod.status! },
    };
  }
  if (present.length === 1 && base.uid === uid) return base;
  const pod = base.pod;
  if (
    !overlayRuntime && base.uid === uid &&
    (pod.metadata.creationTimestamp !== undefined ||
      runtime?.pod.metadata.creationTimestamp === undefined)
  ) {
    // Nothing to add to the kubelet's own pod: the same object, so nothing downstream re-encodes it.
    return base;
  }
  const metadata: PodObject["metadata"] = { ...pod.metadata, uid };
  if (base.uid !== uid) {
    // A static pod adopted under the kubelet's UID: its hash is that UID.
    const hash = runtime === undefined
      ? undefined
      : annotationsOf(runtime.pod)[CONFIG_ANNOTATION.hash];
    metadata.annotations = { ...annotationsOf(pod), [CONFIG_ANNOTATION.hash]: hash ?? uid };
  }
  if (metadata.creationTimestamp === undefined && runtime !== undefined && runtime !== base) {
    const at = runtime.pod.metadata.creationTimestamp;
    if (at !== undefined) metadata.creationTimestamp = at;
  }
  const merged: PodObject = { ...pod, metadata };
  const spec = isJsonObject(pod.spec) ? pod.spec : undefined;
  const runtimeStatus = runtime?.pod.status;
  if (overlayRuntime && runtime !== undefined && runtime !== base && isJsonObject(runtimeStatus)) {
    merged.status = spec !== undefined && Array.isArray(spec.containers)
      ? overlayStatus({
        spec,
        sourceStatus: isJsonObject(pod.status) ? pod.status : undefined,
        runtimeStatus,
      })
      : runtimeStatus as JsonObject;
  }
  return { uid, pod: merged };
}
