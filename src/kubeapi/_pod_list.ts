/**
 * A pod list of the HTTP API, paged as the API server pages one: sorted by
 * namespace and name, `limit` and an opaque `continue` token (the last
 * `namespace/name/uid` sent), `remainingItemCount`, as a `PodList` or a
 * `Table`. The kubelet's `/pods` is the same list without a resourceVersion.
 *
 * @module
 */

import type { CachedPod } from "../cache/types.ts";
import type { JsonObject } from "../model/json.ts";
import type { PodSelector } from "../query/mod.ts";
import type { ServingCore } from "../serving/mod.ts";
import { podItemJson, podTableJson } from "./api_objects.ts";
import { failure, includeObject, json } from "./_responses.ts";

function byNamespaceName(a: CachedPod, b: CachedPod): number {
  const ka = `${a.pod.metadata.namespace}/${a.pod.metadata.name}`;
  const kb = `${b.pod.metadata.namespace}/${b.pod.metadata.name}`;
  return ka < kb ? -1 : ka > kb ? 1 : a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0;
}

interface ContinueToken {
  /** The last `namespace/name` (and UID) already sent. */
  readonly after: string;
}

function encodeContinue(pod: CachedPod): string {
  const after = `${pod.pod.metadata.namespace}/${pod.pod.metadata.name}/${pod.uid}`;
  return btoa(JSON.stringify({ v: 1, after })).replace(/=+$/, "");
}

function decodeContinue(text: string): ContinueToken | undefined {
  try {
    const value = JSON.parse(atob(text)) as { v?: unknown; after?: unknown };
    return value.v === 1 && typeof value.after === "string" ? { after: value.after } : undefined;
  } catch {
    return undefined;
  }
}

function keyOf(pod: CachedPod): string {
  return `${pod.pod.metadata.namespace}/${pod.pod.metadata.name}/${pod.uid}`;
}

/** Lists pods a page at a time, keeping one sorted copy per selection the engine hands out. */
export class PodListPages {
  #core: ServingCore;
  /** Sorted-by-name copies of selections, per selection array. */
  #sorted = new WeakMap<readonly CachedPod[], readonly CachedPod[]>();

  /** @param core The serving core: its query engine and clock. */
  constructor(core: ServingCore) {
    this.#core = core;
  }

  /**
   * @param url The request's URL: `limit`, `continue` and `includeObject`.
   * @param selector The pods to list.
   * @param table The `Table` version asked for, if any.
   * @param kubelet Whether this is the kubelet's `/pods` (no resourceVersion).
   * @returns The page, or a 400 `Status` for a bad `limit` or `continue`.
   */
  respond(
    url: URL,
    selector: PodSelector,
    table: "v1" | "v1beta1" | undefined,
    kubelet: boolean,
  ): Response {
    const engine = this.#core.engine;
    const position = engine.position;
    const listRv = engine.token(position);
    const selected = engine.list(selector);
    let pods = this.#sorted.get(selected);
    if (pods === undefined) {
      pods = [...selected].sort(byNamespaceName);
      this.#sorted.set(selected, pods);
    }
    const metadata: JsonObject = kubelet ? {} : { resourceVersion: listRv };
    const limitText = url.searchParams.get("limit");
    const continueText = url.searchParams.get("continue");
    let start = 0;
    if (continueText !== null && continueText !== "") {
      const token = decodeContinue(continueText);
      if (token === undefined) return failure(400, "Cannot use continue token: malformed");
      let lo = 0;
      let hi = pods.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (keyOf(pods[mid]!) <= token.after) lo = mid + 1;
        else hi = mid;
      }
      start = lo;
    }
    let end = pods.length;
    if (limitText !== null && limitText !== "" && limitText !== "0") {
      const limit = Number(limitText);
      if (!Number.isInteger(limit) || limit < 0) {
        return failure(400, `Cannot use limit "${limitText}": not a non-negative integer`);
      }
      end = Math.min(pods.length, start + limit);
    }
    const page = start === 0 && end === pods.length ? pods : pods.slice(start, end);
    if (end < pods.length) {
      metadata.continue = encodeContinue(pods[end - 1]!);
      metadata.remainingItemCount = pods.length - end;
    }
    if (table !== undefined) {
      const rows = page.map((pod) => ({ pod, resourceVersion: engine.token(pod.version) }));
      return json(
        podTableJson(rows, {
          metadata,
          include: includeObject(url.searchParams.get("includeObject")),
          now: this.#core.clock.now(),
          columns: true,
        }).replace('"meta.k8s.io/v1"', `"meta.k8s.io/${table}"`),
      );
    }
    // The cached items as parts of the body: no string of the whole list is made per request.
    const parts = [
      `{"kind":"PodList","apiVersion":"v1","metadata":${JSON.stringify(metadata)},"items":[`,
    ];
    page.forEach((pod, i) => {
      if (i > 0) parts.push(",");
      parts.push(podItemJson(pod, engine.token(pod.version), true));
    });
    parts.push("]}");
    return json(parts);
  }
}
