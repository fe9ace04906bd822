/**
 * A fake kubelet Pods API server, run as its own process (`deno run` this
 * file with the socket path): `v1alpha1.Pods` as the kubelet serves it
 * (KEP-4188, kubernetes `pkg/kubelet/apis/pods/server.go`), written here from
 * the upstream facts, on our gRPC server:
 * - every RPC answers FAILED_PRECONDITION "Kubelet is initializing" until ready;
 * - WatchPods sends one ADDED per pod sorted by UID, INITIAL_SYNC_COMPLETE,
 *   then live events; a DELETED carries only name, namespace and UID;
 * - enum numbers UNSPECIFIED 0, ADDED 1, MODIFIED 2, DELETED 3, INITIAL_SYNC_COMPLETE 4;
 * - like the kubelet, it removes whatever file is at its path and binds its own.
 *
 * Flags after the path: `--initializing` (start not ready), `--unknown-status`
 * (start with `unknownStatus` on).
 *
 * Driven by JSON lines on stdin, one answer line on stdout per command
 * (`{"ok":true,"watchers":N,"watches":M}`; M counts watches ever started):
 * - `{"op":"set","pods":[...]}`: the pods now (JSON `v1.Pod`s); watchers get
 *   ADDED, MODIFIED (bytes changed) and DELETED for the difference;
 * - `{"op":"ready","value":bool}`: initializing or not;
 * - `{"op":"unknownStatus","value":bool}`: while true, pods are served with
 *   the status the kubelet gives before its status manager knows one (phase
 *   Pending, Ready False); turning it off sends MODIFIED for each pod;
 * - `{"op":"drop"}`: every watch ends RESOURCE_EXHAUSTED (too slow);
 * - `{"op":"close"}`: every watch ends OK;
 * - `{"op":"raw","type":N,"pod":{...}}`: one event as given, to every watcher;
 * - `{"op":"stats"}`: only the answer line.
 *
 * @module
 */

import { GrpcServer, type MessageSink, type MethodHandler } from "../../src/grpc/server.ts";
import { GrpcError, STATUS } from "../../src/grpc/status.ts";
import type { PodObject } from "../../src/model/pod.ts";
import {
  decodeGetPodRequest,
  encodeGetPodResponse,
  encodeListPodsResponse,
  encodePod,
  encodeWatchPodsEvent,
  WATCH_EVENT_TYPE,
  type WatchEventType,
} from "../../src/proto/mod.ts";

type Event = { readonly type: WatchEventType; readonly pod?: Uint8Array };

interface Watcher {
  readonly queue: Event[];
  wake: (() => void) | undefined;
  end: GrpcError | "ok" | undefined;
}

const path = Deno.args[0];
if (path === undefined) throw new TypeError("Usage: fake_kubelet_podsapi_server.ts SOCKET");

let ready = !Deno.args.includes("--initializing");
let unknownStatus = Deno.args.includes("--unknown-status");
let watches = 0;
const pods = new Map<string, PodObject>();
const watchers = new Set<Watcher>();

function served(pod: PodObject): PodObject {
  if (!unknownStatus) return pod;
  const status = {
    phase: "Pending",
    conditions: [{ type: "Ready", status: "False" }],
  };
  return { ...pod, status };
}

function bytesOf(pod: PodObject): Uint8Array {
  return encodePod(served(pod));
}

function sortedUids(): string[] {
  return [...pods.keys()].sort();
}

function push(watcher: Watcher, event: Event): void {
  watcher.queue.push(event);
  const wake = watcher.wake;
  watcher.wake = undefined;
  wake?.();
}

function broadcast(event: Event): void {
  for (const watcher of watchers) push(watcher, event);
}

function endAll(end: GrpcError | "ok"): void {
  for (const watcher of watchers) {
    watcher.end = end;
    watcher.wake?.();
  }
}

function checkReady(): void {
  if (!ready) throw new GrpcError(STATUS.FAILED_PRECONDITION, "Kubelet is initializing");
}

async function watchPods(signal: AbortSignal, sink: MessageSink): Promise<void> {
  checkReady();
  const watcher: Watcher = { queue: [], wake: undefined, end: undefined };
  for (const uid of sortedUids()) {
    watcher.queue.push({ type: WATCH_EVENT_TYPE.ADDED, pod: bytesOf(pods.get(uid)!) });
  }
  watcher.queue.push({ type: WATCH_EVENT_TYPE.INITIAL_SYNC_COMPLETE });
  watchers.add(watcher);
  watches++;
  try {
    for (;;) {
      if (signal.aborted) return;
      if (watcher.end !== undefined) {
        if (watcher.end === "ok") return;
        throw watcher.end;
      }
      const event = watcher.queue.shift();
      if (event === undefined) {
        await new Promise<void>((resolve) => {
          watcher.wake = resolve;
          signal.addEventListener("abort", () => resolve(), { once: true });
        });
        continue;
      }
      await sink.send(encodeWatchPodsEvent(event.type, event.pod));
    }
  } finally {
    watchers.delete(watcher);
  }
}

const methods = new Map<string, MethodHandler>([
  ["/v1alpha1.Pods/WatchPods", {
    kind: "serverStream",
    handle: (_request, call, sink) => watchPods(call.signal, sink),
  }],
  ["/v1alpha1.Pods/ListPods", {
    kind: "unary",
    handle: () => {
      checkReady();
      return Promise.resolve(
        encodeListPodsResponse(sortedUids().map((u) => bytesOf(pods.get(u)!))),
      );
    },
  }],
  ["/v1alpha1.Pods/GetPod", {
    kind: "unary",
    handle: (request) => {
      checkReady();
      const { podUID } = decodeGetPodRequest(request);
      const pod = pods.get(podUID);
      if (pod === undefined) {
        throw new GrpcError(STATUS.NOT_FOUND, `pod with UID "${podUID}" not found`);
      }
      return Promise.resolve(encodeGetPodResponse(bytesOf(pod)));
    },
  }],
]);

function setPods(next: readonly PodObject[]): void {
  const seen = new Set<string>();
  for (const pod of next) {
    const uid = pod.metadata.uid;
    seen.add(uid);
    const before = pods.get(uid);
    pods.set(uid, pod);
    const bytes = bytesOf(pod);
    if (before === undefined) broadcast({ type: WATCH_EVENT_TYPE.ADDED, pod: bytes });
    else if (!sameBytes(bytesOf(before), bytes)) {
      broadcast({ type: WATCH_EVENT_TYPE.MODIFIED, pod: bytes });
    }
  }
  for (const uid of [...pods.keys()].sort()) {
    if (seen.has(uid)) continue;
    const { name, namespace } = pods.get(uid)!.metadata;
    pods.delete(uid);
    // Since March 2026 the kubelet's DELETED carries only the pod's keys.
    broadcast({
      type: WATCH_EVENT_TYPE.DELETED,
      pod: encodePod({ metadata: { name, namespace, uid } }),
    });
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

function command(line: string): void {
  const c = JSON.parse(line);
  switch (c.op) {
    case "set":
      setPods(c.pods);
      break;
    case "ready":
      ready = c.value;
      break;
    case "unknownStatus": {
      const was = unknownStatus;
      unknownStatus = c.value;
      if (was && !unknownStatus) {
        for (const uid of sortedUids()) {
          broadcast({ type: WATCH_EVENT_TYPE.MODIFIED, pod: bytesOf(pods.get(uid)!) });
        }
      }
      break;
    }
    case "drop":
      endAll(new GrpcError(STATUS.RESOURCE_EXHAUSTED, "watch client too slow, dropped"));
      break;
    case "close":
      endAll("ok");
      break;
    case "raw":
      broadcast({ type: c.type, ...(c.pod ? { pod: encodePod(c.pod) } : {}) });
      break;
    case "stats":
      break;
    default:
      throw new TypeError(`unknown op "${c.op}"`);
  }
}

// The kubelet removes whatever is at its socket path and binds its own;
// again when a server made the path anew in between (a daemon that saw its
// socket go missing binds it again within its check period).
// Not within the same millisecond as that socket was made: the file system
// may hand its freed inode to ours, and the same inode born in the same
// millisecond is, to the daemon, its own socket (SocketIdentity).
let listener: Deno.Listener | undefined;
for (let attempt = 0; listener === undefined; attempt++) {
  if (attempt > 0) await new Promise((r) => setTimeout(r, 2));
  await Deno.remove(path).catch(() => {});
  try {
    listener = Deno.listen({ transport: "unix", path });
  } catch (err) {
    if (!(err instanceof Deno.errors.AddrInUse) || attempt >= 50) throw err;
  }
}
const server = new GrpcServer({ methods });
server.serve(listener);

const out = Deno.stdout.writable.getWriter();
const encoder = new TextEncoder();
await out.write(encoder.encode(`${JSON.stringify({ ok: true, listening: path })}\n`));
let buffered = "";
for await (const chunk of Deno.stdin.readable.pipeThrough(new TextDecoderStream())) {
  buffered += chunk;
  let newline;
  while ((newline = buffered.indexOf("\n")) >= 0) {
    const line = buffered.slice(0, newline);
    buffered = buffered.slice(newline + 1);
    if (line.trim() === "") continue;
    let answer;
    try {
      command(line);
      answer = { ok: true, watchers: watchers.size, watches };
    } catch (error) {
      answer = { ok: false, error: (error as Error).message };
    }
    await out.write(encoder.encode(`${JSON.stringify(answer)}\n`));
  }
}
await server.close(0);
