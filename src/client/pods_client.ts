/**
 * A Pods API client over the UNIX socket, speaking bytes on the wire and
 * decoding pods with the same codec the server uses.
 *
 * @module
 */

import { type CallOptions, GrpcChannel } from "../grpc/client.ts";
import type { PodObject } from "../model/pod.ts";
import {
  decodeGetPodResponse,
  decodeListPodsResponse,
  decodePod,
  decodeWatchPodsEvent,
  encodeGetPodRequest,
  WATCH_EVENT_TYPE,
} from "../proto/mod.ts";

/** Options of {@linkcode PodsClient}. */
export interface PodsClientOptions {
  /** Field mask paths (sent as `x-kubernetes-fieldmask`). */
  fields?: readonly string[];
  /** Per-call deadline for List and Get, ms. @default {10000} */
  timeoutMs?: number;
}

/** One event of a watch, as the CLI shows it. */
export interface ClientWatchEvent {
  type: "ADDED" | "MODIFIED" | "DELETED" | "INITIAL_SYNC_COMPLETE";
  pod?: PodObject;
}

const EVENT_NAMES = new Map<number, ClientWatchEvent["type"]>([
  [WATCH_EVENT_TYPE.ADDED, "ADDED"],
  [WATCH_EVENT_TYPE.MODIFIED, "MODIFIED"],
  [WATCH_EVENT_TYPE.DELETED, "DELETED"],
  [WATCH_EVENT_TYPE.INITIAL_SYNC_COMPLETE, "INITIAL_SYNC_COMPLETE"],
]);

/** A `v1alpha1.Pods` client. */
export class PodsClient implements Disposable {
  #channel: GrpcChannel;
  #options: PodsClientOptions;

  /**
   * @param socketPath The daemon's socket.
   * @param options Field mask and deadline.
   */
  constructor(socketPath: string, options: PodsClientOptions = {}) {
    this.#channel = new GrpcChannel({ transport: "unix", path: socketPath }, {
      maxReceiveMessageBytes: 256 * 1024 * 1024,
      userAgent: "pods-api-cli",
    });
    this.#options = options;
  }

  #callOptions(): CallOptions {
    return this.#options.fields?.length
      ? { metadata: { "x-kubernetes-fieldmask": this.#options.fields.join(",") } }
      : {};
  }

  #unary(method: string, request: Uint8Array): Promise<Uint8Array> {
    return this.#channel.unary(`/v1alpha1.Pods/${method}`, request, {
      ...this.#callOptions(),
      timeoutMs: this.#options.timeoutMs ?? 10_000,
    });
  }

  /** @returns Every pod on the node. */
  async list(): Promise<PodObject[]> {
    return decodeListPodsResponse(await this.#unary("ListPods", new Uint8Array())).map(decodePod);
  }

  /**
   * @param uid The pod's UID.
   * @returns The pod.
   */
  async get(uid: string): Promise<PodObject> {
    return decodePod(decodeGetPodResponse(await this.#unary("GetPod", encodeGetPodRequest(uid))));
  }

  /**
   * Streams watch events until the signal aborts or the server ends the stream.
   *
   * @param signal Cancels the watch.
   * @returns The events.
   */
  async *watch(signal: AbortSignal): AsyncGenerator<ClientWatchEvent> {
    const call = this.#channel.serverStream("/v1alpha1.Pods/WatchPods", new Uint8Array(), {
      ...this.#callOptions(),
      signal,
    });
    try {
      for await (const message of call) {
        const event = decodeWatchPodsEvent(message);
        const type = EVENT_NAMES.get(event.type);
        if (type === undefined) throw new TypeError(`Unknown watch event type ${event.type}`);
        yield event.pod && event.pod.byteLength > 0
          ? { type, pod: decodePod(event.pod) }
          : { type };
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
