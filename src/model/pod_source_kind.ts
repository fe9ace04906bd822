/**
 * The kinds of pod source the daemon can run, and what each is worth: the
 * one table the merge, the new-pod hold and the daemon read, so that no
 * stage names a source kind in a rule. Adding a source is a folder under
 * `src/sources/` and a row here.
 *
 * @module
 */

/** What the merge and the pipeline make of one kind of source. */
export interface SourceTraits {
  /** Spec priority: of the sources that have a pod, the lowest rank gives its spec and metadata. */
  readonly specRank: number;
  /**
   * Whose status the merged pod carries: `own` the source's status as it is
   * (the kubelet's own word), `runtime` the runtime's, which is overlaid
   * onto the status of every other source, `overlaid` rebuilt from the
   * runtime when the runtime has the pod.
   */
  readonly status: "own" | "runtime" | "overlaid";
  /**
   * Where its static pods stand among those that lend a manifest's pod the
   * kubelet's UID (lower lends first); `undefined`: it lends none.
   */
  readonly lendsUidRank: number | undefined;
  /** Its UIDs are made up here (a manifest's): a lent UID replaces them. */
  readonly borrowsUid: boolean;
  /** Its view holds the spec of every pod on the node: a pod only the runtime shows waits for it. */
  readonly newPodsWait: boolean;
  /** It may hand on a held view while it does not answer (its status then no longer news). */
  readonly canDegrade: boolean;
}

/** The traits a row leaves out: lends no UID, borrows none, holds no pod back, never degrades. */
const PLAIN = {
  lendsUidRank: undefined,
  borrowsUid: false,
  newPodsWait: false,
  canDegrade: false,
} as const;

/** The sources the daemon can run, and their traits. */
export const SOURCE_TRAITS = {
  // The kubelet publishes a pod when it admits it, before it asks the runtime
  // for its sandbox: a pod only the runtime shows is none it is about to send
  // (and a node without the API would hold every new pod for nothing).
  "kubelet-podsapi": { ...PLAIN, specRank: 0, status: "own", lendsUidRank: 0, canDegrade: true },
  // A static pod's mirror pod comes after the runtime started it: worth a short wait.
  apiserver: { ...PLAIN, specRank: 1, status: "overlaid", lendsUidRank: 2, newPodsWait: true },
  kubelet: { ...PLAIN, specRank: 2, status: "overlaid", lendsUidRank: 1, newPodsWait: true },
  static: { ...PLAIN, specRank: 3, status: "overlaid", borrowsUid: true },
  // The simulator's node: the spec of every simulated pod, as a kubelet's.
  fake: { ...PLAIN, specRank: 4, status: "overlaid", newPodsWait: true },
  cri: { ...PLAIN, specRank: 5, status: "runtime", lendsUidRank: 3 },
} as const satisfies Record<string, SourceTraits>;

/**
 * The kinds of pod source the daemon can run: the container runtime (CRI),
 * the kubelet's own Pods API (`WatchPods` on its socket), the local
 * kubelet's `/pods`, the API server (the node's pods, watched), a static
 * manifest directory, and the fake (scripted or simulated) source.
 */
export type PodSourceKind = keyof typeof SOURCE_TRAITS;

/** Every kind, in spec priority order (richest spec first). */
export const SPEC_ORDER: readonly PodSourceKind[] = (Object.keys(SOURCE_TRAITS) as PodSourceKind[])
  .sort((a, b) => SOURCE_TRAITS[a].specRank - SOURCE_TRAITS[b].specRank);

/**
 * @param kind A source kind.
 * @returns Its traits.
 */
export function traitsOf(kind: PodSourceKind): SourceTraits {
  return SOURCE_TRAITS[kind];
}

/**
 * @param kind A source kind.
 * @returns Whether it is the container runtime: its spec is only what it runs now.
 */
export function isRuntime(kind: PodSourceKind): boolean {
  return SOURCE_TRAITS[kind].status === "runtime";
}
