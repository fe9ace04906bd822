/**
 * Merges the views of several pod sources into one, keyed by pod UID, the
 * way the kubelet combines its pod sources (spec) with the runtime (status):
 * spec and metadata come from the richest source that has the pod (kubelet
 * `/pods`, then a static manifest, then the fake source, then CRI), status is
 * rebuilt from the runtime when the runtime has the pod (see
 * `overlayStatus()` in `src/status/`), and otherwise is the source's own.
 *
 * @module
 */

import type { JsonObject } from "../model/json.ts";
import { isJsonObject } from "../model/json.ts";
import type { PodObject, PodSnapshot, PodUid } from "../model/pod.ts";
import { CONFIG_ANNOTATION } from "../model/kubelet_keys.ts";
import type { PodSourceKind } from "../model/pod_source_kind.ts";
import { isTerminalPhase, overlayStatus } from "../status/mod.ts";

/** Source kinds in spec priority order: the first that has a pod gives its spec. */
const SPEC_ORDER: readonly PodSourceKind[] = ["kubelet", "static", "fake", "cri"];
const KUBELET = 0;
const STATIC = 1;
const CRI = 3;

/** A pod's inputs, one slot per kind of {@linkcode SPEC_ORDER}. */
type Inputs = readonly (PodSnapshot | undefined)[];

interface View {
  readonly list: readonly PodSnapshot[];
  readonly byUid: ReadonlyMap<PodUid, PodSnapshot>;
  /** Pods that carry static-pod annotations, by `namespace/name`. */
  readonly staticByName: ReadonlyMap<string, readonly PodSnapshot[]>;
}

interface Entry {
  readonly inputs: Inputs;
  readonly output: PodSnapshot;
}

const EMPTY_VIEW: View = { list: [], byUid: new Map(), staticByName: new Map() };

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

function makeView(list: readonly PodSnapshot[], indexStatic: boolean): View {
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
  return { list, byUid, staticByName };
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
 * kubelet's `/pods` or the runtime has a static pod of the same namespace and
 * name (`kubernetes.io/config.source: file`, or a `kubernetes.io/config.hash`
 * annotation), the merged pod takes that UID: the kubelet's first, else the
 * newest runtime pod's. A static pod served before the kubelet started it
 * therefore changes UID once it starts (watchers see the derived UID DELETED
 * and the kubelet's UID ADDED), exactly as a pod replaced by a new one.
 *
 * A pod leaves the merged view only when no source and not the runtime has
 * it. Unchanged pods (none of their inputs is a new object) are returned as
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

  /**
   * Stores a source's latest full view and returns the merged view.
   *
   * @param kind Which source the view is from.
   * @param snapshots Every pod the source has now (for a repeated UID the last counts).
   * @returns Every merged pod, each once.
   * @throws {RangeError} When `kind` is not a known source kind.
   */
  update(kind: PodSourceKind, snapshots: readonly PodSnapshot[]): PodSnapshot[] {
    const slot = SPEC_ORDER.indexOf(kind);
    if (slot < 0) throw new RangeError(`Cannot merge pods of source kind "${kind}"`);
    if (this.#views[slot]!.list === snapshots) return this.#last;
    this.#views[slot] = makeView(snapshots, slot === KUBELET || slot === CRI);
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
      if (slot === STATIC) return;
      for (const [uid, snapshot] of view.byUid) put(uid, slot, snapshot);
    });
    for (const [uid, snapshot] of views[STATIC]!.byUid) {
      put(this.#staticUid(uid, snapshot), STATIC, snapshot);
    }
    return groups;
  }

  /** The UID a static source's pod is served under. */
  #staticUid(uid: PodUid, snapshot: PodSnapshot): PodUid {
    const views = this.#views;
    // The manifest named its own UID (the kubelet keeps it), or it matches already.
    if (views.some((v, slot) => slot !== STATIC && v.byUid.has(uid))) return uid;
    const key = nameKey(snapshot.pod);
    const kubelet = views[KUBELET]!.staticByName.get(key);
    if (kubelet !== undefined) return newest(kubelet).uid;
    const runtime = views[CRI]!.staticByName.get(key);
    if (runtime !== undefined) return newest(runtime).uid;
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
      if (previous !== undefined && sameInputs(previous.inputs, inputs)) {
        entry = previous;
      } else {
        entry = { inputs, output: mergeOne(uid, inputs, previous?.output) };
        changed = true;
      }
      entries.set(uid, entry);
      out.push(entry.output);
    }
    this.#entries = entries;
    if (changed) this.#last = out;
    return this.#last;
  }
}

function phaseOf(pod: Readonly<PodObject> | undefined): unknown {
  return isJsonObject(pod?.status) ? pod.status.phase : undefined;
}

function mergeOne(uid: PodUid, inputs: Inputs, previous: PodSnapshot | undefined): PodSnapshot {
  const present = inputs.filter((s): s is PodSnapshot => s !== undefined);
  const base = present[0]!;
  const runtime = inputs[CRI];
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
  if (runtime !== undefined && runtime !== base && isJsonObject(runtimeStatus)) {
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
