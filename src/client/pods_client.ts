/**
 * A Pods API client over the UNIX socket, speaking bytes on the wire and
 * decoding pods with the same codec the server uses.
 *
 * @module
 */

import { Client, credentials, Metadata, type ServiceError } from "@grpc/grpc-js";
import { Buffer } from "node:buffer";
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

function raw(buffer: Uint8Array): Buffer {
  return Buffer.from(buffer.buffer, buffer.byteOffset, buffer.byteLength);
}

/** A `v1alpha1.Pods` client. */
export class PodsClient implements Disposable {
  #client: Client;
  #options: PodsClientOptions;

  /**
   * @param socketPath The daemon's socket.
   * @param options Field mask and deadline.
   */
  constructor(socketPath: string, options: PodsClientOptions = {}) {
    this.#client = new Client(`unix:${socketPath}`, credentials.createInsecure());
    this.#options = options;
  }

  #metadata(): Metadata {
    const md = new Metadata();
    if (this.#options.fields?.length) {
      md.set("x-kubernetes-fieldmask", this.#options.fields.join(","));
    }
    return md;
  }

  #unary(method: string, request: Uint8Array): Promise<Uint8Array> {
    const deadline = Date.now() + (this.#options.timeoutMs ?? 10_000);
    return new Promise((resolve, reject) => {
      this.#client.makeUnaryRequest(
        `/v1alpha1.Pods/${method}`,
        raw,
        (b: Buffer) => new Uint8Array(b),
        request,
        this.#metadata(),
        { deadline },
        (err: ServiceError | null, value?: Uint8Array) => err ? reject(err) : resolve(value!),
      );
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
    const call = this.#client.makeServerStreamRequest(
      "/v1alpha1.Pods/WatchPods",
      raw,
      (b: Buffer) => new Uint8Array(b),
      new Uint8Array(),
      this.#metadata(),
    );
    const onAbort = () => call.cancel();
    signal.addEventListener("abort", onAbort);
    try {
      for await (const message of call as AsyncIterable<Uint8Array>) {
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
      signal.removeEventListener("abort", onAbort);
    }
  }

  /** Closes the connection. */
  [Symbol.dispose](): void {
    this.#client.close();
  }
}
