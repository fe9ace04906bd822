/**
 * A `podsapi.v1.PodQuery` client over the UNIX socket, for the CLI: selected
 * lists, lookups by name, container ID and IP, resumable watches.
 *
 * @module
 */

import { GrpcChannel } from "../grpc/client.ts";
import type { PodObject } from "../model/pod.ts";
import {
  decodeListResponse,
  decodePod,
  decodeQueryGetResponse,
  decodeWatchEvent,
  encodeGetRequest,
  encodeListRequest,
  encodeWatchRequest,
  type GetKeyMessage,
  QUERY_EVENT_TYPE,
  type SelectorMessage,
} from "../proto/mod.ts";

/** Options of {@linkcode PodQueryClient}. */
export interface PodQueryClientOptions {
  /** Field mask paths (the request's `mask`). */
  fields?: readonly string[];
  /** Per-call deadline for List and Get, ms. @default {10000} */
  timeoutMs?: number;
}

/** One PodQuery watch event, as the CLI shows it. */
export interface QueryWatchEvent {
  type: "ADDED" | "MODIFIED" | "DELETED" | "INITIAL_SYNC_COMPLETE" | "BOOKMARK";
  pod?: PodObject;
  resumeToken?: string;
}

const EVENT_NAMES = new Map<number, QueryWatchEvent["type"]>(
  (Object.entries(QUERY_EVENT_TYPE) as Array<[QueryWatchEvent["type"], number]>)
    .filter(([name]) => name !== ("UNSPECIFIED" as string))
    .map(([name, value]) => [value, name]),
);

/** A `podsapi.v1.PodQuery` client. */
export class PodQueryClient implements Disposable {
  #channel: GrpcChannel;
  #options: PodQueryClientOptions;

  /**
   * @param socketPath The daemon's socket.
   * @param options Field mask and deadline.
   */
  constructor(socketPath: string, options: PodQueryClientOptions = {}) {
    this.#channel = new GrpcChannel({ transport: "unix", path: socketPath }, {
      maxReceiveMessageBytes: 256 * 1024 * 1024,
      userAgent: "pods-api-cli",
    });
    this.#options = options;
  }

  #mask(): { mask?: readonly string[] } {
    return this.#options.fields?.length ? { mask: this.#options.fields } : {};
  }

  #unary(method: string, request: Uint8Array): Promise<Uint8Array> {
    return this.#channel.unary(`/podsapi.v1.PodQuery/${method}`, request, {
      timeoutMs: this.#options.timeoutMs ?? 10_000,
    });
  }

  /**
   * @param selector Namespace, label and field selectors.
   * @returns The selected pods and the token to watch from.
   */
  async list(
    selector: Partial<SelectorMessage>,
  ): Promise<{ pods: PodObject[]; resumeToken: string }> {
    const res = decodeListResponse(
      await this.#unary("List", encodeListRequest({ selector, ...this.#mask() })),
    );
    return { pods: res.pods.map(decodePod), resumeToken: res.resumeToken };
  }

  /**
   * @param key UID, namespace/name, container ID or pod IP.
   * @param includeDeleted Also find pods deleted within the tombstone TTL.
   * @returns The pod and whether it is a tombstone.
   */
  async get(
    key: GetKeyMessage,
    includeDeleted = false,
  ): Promise<{ pod: PodObject; deleted: boolean }> {
    const res = decodeQueryGetResponse(
      await this.#unary("Get", encodeGetRequest({ key, includeDeleted, ...this.#mask() })),
    );
    return { pod: decodePod(res.pod), deleted: res.deleted };
  }

  /**
   * Streams watch events until the signal aborts or the server ends the stream.
   *
   * @param request Selector, resume token and bookmark period.
   * @param signal Cancels the watch.
   * @returns The events.
   */
  async *watch(
    request: { selector: Partial<SelectorMessage>; resumeToken?: string; bookmarkSeconds?: number },
    signal: AbortSignal,
  ): AsyncGenerator<QueryWatchEvent> {
    const call = this.#channel.serverStream(
      "/podsapi.v1.PodQuery/Watch",
      encodeWatchRequest({ ...request, ...this.#mask() }),
      { signal },
    );
    try {
      for await (const message of call) {
        const event = decodeWatchEvent(message);
        const type = EVENT_NAMES.get(event.type);
        if (type === undefined) throw new TypeError(`Unknown watch event type ${event.type}`);
        const out: QueryWatchEvent = { type };
        if (event.pod !== undefined && event.pod.byteLength > 0) out.pod = decodePod(event.pod);
        if (event.resumeToken !== "") out.resumeToken = event.resumeToken;
        yield out;
      }
    } catch (err) {
      if (signal.aborted) return;
      throw err;
    } finally {
      call.cancel();
    }
  }

  /** Closes the connection. */
  [Symbol.dispose](): void {
    this.#channel.close();
  }
}
