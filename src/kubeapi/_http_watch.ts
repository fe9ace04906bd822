/**
 * The HTTP API's watch (`?watch=1`): the serving core's watch as the API
 * server streams one, a JSON line per event (`ADDED`, `MODIFIED`,
 * `DELETED`, `BOOKMARK`, the `k8s.io/initial-events-end` bookmark, and a
 * closing `ERROR` with 410 when the client must list or watch again), paced
 * by the client's reading, ended by `timeoutSeconds`, the client leaving or
 * the server closing, and its watch slot given back however it ends.
 *
 * @module
 */

import type { RequestInfo } from "../http1/mod.ts";
import { streamingResponse } from "../http1/mod.ts";
import type { Logger } from "../log.ts";
import {
  type PodSelector,
  ResumeTokenError,
  TOKEN_TOO_OLD,
  WatchDroppedError,
  type WatchItem,
} from "../query/mod.ts";
import { Refusal, type ServedWatch, type ServingCore } from "../serving/mod.ts";
import { podItemJson, podObjectJson, podTableJson, statusObject } from "./api_objects.ts";
import { ENCODER, includeObject, JSON_TYPE, parseBool, refused } from "./_responses.ts";

/** One watch request, routed and admitted. */
export interface HttpWatchRequest {
  /** The request's connection: its response's end gives the watch slot back. */
  readonly info: RequestInfo;
  /** `resourceVersion`, `allowWatchBookmarks`, `sendInitialEvents`, `timeoutSeconds`, `includeObject`. */
  readonly url: URL;
  /** The pods to watch. */
  readonly selector: PodSelector;
  /** The `Table` version asked for, if any. */
  readonly table: "v1" | "v1beta1" | undefined;
}

/** What {@linkcode serveHttpWatch} reads. */
export interface HttpWatchDeps {
  /** Opens the watch (slots, shutdown) and gives the query engine and clock. */
  readonly core: ServingCore;
  /** Idle time after which a watch with `allowWatchBookmarks` gets a BOOKMARK, ms. */
  readonly bookmarkPeriodMs: number;
  readonly log: Logger;
}

/**
 * Opens a watch and streams it.
 *
 * @param request The routed request.
 * @param deps The serving core, bookmark period and log.
 * @returns The streaming response; a 429/503 refusal; or a one-line stream
 *   with a 410 `ERROR` when the resourceVersion cannot be resumed.
 */
export function serveHttpWatch(request: HttpWatchRequest, deps: HttpWatchDeps): Response {
  const { info, url, selector, table } = request;
  const params = url.searchParams;
  const rv = params.get("resourceVersion") ?? "";
  const bookmarks = parseBool(params.get("allowWatchBookmarks"));
  const initialEventsEnd = bookmarks && parseBool(params.get("sendInitialEvents"));
  const timeoutText = params.get("timeoutSeconds");
  const timeoutSeconds = timeoutText === null ? 0 : Number(timeoutText);
  // The client's end is the response's: its body cancelled or the response
  // over (`info.completed`). `request.signal` is not used: Deno warns that
  // it also aborts after a response sent in full (its legacy behaviour).
  const done = new AbortController();
  const signals = [done.signal];
  if (Number.isFinite(timeoutSeconds) && timeoutSeconds > 0) {
    signals.push(AbortSignal.timeout(timeoutSeconds * 1000));
  }
  const signal = signals.length === 1 ? done.signal : AbortSignal.any(signals);
  const engine = deps.core.engine;
  const include = includeObject(params.get("includeObject"));
  const clock = deps.core.clock;
  const line = (type: string, object: string) =>
    ENCODER.encode(`{"type":"${type}","object":${object}}\n`);
  let watch: ServedWatch;
  try {
    watch = deps.core.openWatch({
      surface: "http",
      selector,
      resumeToken: rv === "0" ? "" : rv,
      bookmarkMs: bookmarks ? deps.bookmarkPeriodMs : 0,
      signal,
    });
  } catch (err) {
    if (err instanceof Refusal) return refused(err);
    if (!(err instanceof ResumeTokenError)) throw err;
    // As the API server: the stream opens, says 410 Gone once, and ends.
    const message = err.problem === "expired" ? TOKEN_TOO_OLD : `${err.message}; list again`;
    return new Response(
      line("ERROR", JSON.stringify(statusObject(410, message))),
      { headers: { "content-type": JSON_TYPE } },
    );
  }
  const end = () => {
    done.abort();
    watch.close();
  };
  // However the response ends (sent, client gone, server closed), the slot is given back.
  info.completed.then(end, end);
  const bookmark = (position: number, metadata: Record<string, unknown> = {}) =>
    line(
      "BOOKMARK",
      JSON.stringify({
        kind: "Pod",
        apiVersion: "v1",
        metadata: { resourceVersion: engine.token(position), ...metadata },
      }),
    );
  const render = (item: WatchItem): Uint8Array | undefined => {
    if (item.type === "INITIAL_SYNC_COMPLETE") {
      if (!initialEventsEnd) return undefined;
      return bookmark(item.position, { annotations: { "k8s.io/initial-events-end": "true" } });
    }
    if (item.type === "BOOKMARK") return bookmark(item.position);
    const pod = item.pod!;
    // Initial ADDED items carry the watch's start: a client that resumes
    // after the initial list gets exactly the changes since.
    const position = item.position === 0 ? watch.position : item.position;
    const token = engine.token(position);
    if (table !== undefined) {
      const object = podTableJson([{ pod, resourceVersion: token }], {
        metadata: { resourceVersion: token },
        include,
        now: clock.now(),
        columns: true,
      }).replace('"meta.k8s.io/v1"', `"meta.k8s.io/${table}"`);
      return line(item.type, object);
    }
    return line(item.type, podObjectJson(podItemJson(pod, token, position === pod.version)));
  };
  const log = deps.log;
  const items = watch[Symbol.asyncIterator]();
  /** The line that ends a failed stream, as the API server sends it. */
  const failed = (err: unknown): Uint8Array => {
    if (err instanceof WatchDroppedError) {
      return line("ERROR", JSON.stringify(statusObject(410, `${err.message}; watch again`)));
    }
    log.error("http watch failed", { error: err });
    return line("ERROR", JSON.stringify(statusObject(500, "internal error")));
  };
  const body = new ReadableStream<Uint8Array>({
    // One line per pull: the client's reading paces the watch (its queue drops it if too slow).
    async pull(controller) {
      try {
        for (;;) {
          const next = await items.next();
          // Cancelled meanwhile: the stream is gone, nothing more to write.
          if (done.signal.aborted) return;
          if (next.done) break;
          const frame = render(next.value);
          if (frame !== undefined) return controller.enqueue(frame);
        }
      } catch (err) {
        if (done.signal.aborted) return;
        controller.enqueue(failed(err));
      }
      end();
      controller.close();
    },
    // The client left: its subscription ends and the slot is free at once.
    cancel: end,
  }, { highWaterMark: 0 });
  return streamingResponse(
    new Response(body, {
      headers: { "content-type": JSON_TYPE, "cache-control": "no-cache" },
    }),
  );
}
