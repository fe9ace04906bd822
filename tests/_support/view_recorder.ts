/**
 * A {@linkcode ViewSink} that keeps what a watched source last handed it,
 * for tests that read a source the way the daemon's feed does.
 *
 * @module
 */

import type { PodSnapshot } from "../../src/model/pod.ts";
import type { ViewSink } from "../../src/sources/mod.ts";
import { poll } from "./poll.ts";

/** What a source last said: a view (held or not) or a failure. */
type Outcome =
  | { readonly view: readonly PodSnapshot[]; readonly heldBecause: string | undefined }
  | { readonly error: Error };

/** The sink and what reached it. */
export class ViewRecorder implements ViewSink {
  #latest: Outcome | undefined;
  /** Views handed on so far. */
  views = 0;

  /** @inheritdoc */
  view(snapshots: readonly PodSnapshot[], heldBecause?: string): void {
    this.views++;
    this.#latest = { view: snapshots, heldBecause };
  }

  /** @inheritdoc */
  failed(error: unknown): void {
    this.#latest = { error: error as Error };
  }

  /** Why the last view is held; `undefined` when it is live or none came. */
  get heldBecause(): string | undefined {
    const latest = this.#latest;
    return latest !== undefined && "view" in latest ? latest.heldBecause : undefined;
  }

  /**
   * @returns The last view, once the source has said anything.
   * @throws The last failure, when that is what the source said last.
   */
  async latest(): Promise<readonly PodSnapshot[]> {
    const outcome = this.#latest ?? await poll(() => this.#latest, { what: "a first outcome" });
    if ("error" in outcome) throw outcome.error;
    return outcome.view;
  }
}
