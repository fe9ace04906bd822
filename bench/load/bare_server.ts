/**
 * The transport ceiling of the load benchmark: a bare grpc-js server on a
 * UNIX socket that answers `/v1alpha1.Pods/ListPods` and `GetPod` with
 * pre-built response bytes (the daemon's own responses, dumped by the
 * benchmark), through identity serializers. No cache, no rate limit, no
 * metrics, no mask parsing: what Deno + grpc-js cost to move the bytes.
 *
 * Usage: `bare_server.ts --socket S --list FILE [--masked FILE] [--get FILE]`;
 * prints `{"ready":true}` on stdout once bound; stops on SIGTERM.
 *
 * @module
 */

import { Server, ServerCredentials } from "@grpc/grpc-js";
import type { sendUnaryData, ServerUnaryCall, ServerWritableStream } from "@grpc/grpc-js";
import { Buffer } from "node:buffer";
import { parseArgs } from "node:util";
import { podsServiceDefinition } from "../../tests/_support/pods_service_definition.ts";

/** Splits a ListPodsResponse into `WatchPodsEvent{ADDED, pod}` frames. */
function watchFrames(list: Buffer): Buffer[] {
  const frames: Buffer[] = [];
  let pos = 0;
  const varint = (): number => {
    let n = 0;
    for (let shift = 0;; shift += 7) {
      const b = list[pos++]!;
      n += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return n;
    }
  };
  while (pos < list.length) {
    const start = pos;
    varint();
    const len = varint();
    const body = list.subarray(start, pos + len);
    pos += len;
    // Field 1 (pods) becomes field 2 (pod) after the type field.
    const frame = Buffer.concat([Buffer.from([8, 1]), body]);
    frame[2] = 0x12;
    frames.push(frame);
  }
  return frames;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      socket: { type: "string" },
      list: { type: "string" },
      masked: { type: "string" },
      get: { type: "string" },
    },
  });
  const read = async (path: string | undefined): Promise<Buffer> =>
    path === undefined ? Buffer.alloc(0) : Buffer.from(await Deno.readFile(path));
  const list = await read(values.list);
  const masked = values.masked === undefined ? list : await read(values.masked);
  const get = await read(values.get);
  const socket = values.socket!;
  await Deno.remove(socket).catch(() => {});
  const server = new Server({ "grpc.max_send_message_length": 256 * 1024 * 1024 });
  const definition = podsServiceDefinition("v1alpha1.Pods");
  const events = watchFrames(list);
  server.addService(definition, {
    ListPods(call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>) {
      const mask = call.metadata.get("x-kubernetes-fieldmask");
      callback(null, mask.length > 0 ? masked : list);
    },
    GetPod(_call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>) {
      callback(null, get);
    },
    async WatchPods(call: ServerWritableStream<Buffer, Buffer>) {
      // The initial list as pre-built ADDED frames, honouring backpressure,
      // then INITIAL_SYNC_COMPLETE; then idle until the client leaves.
      let cancelled = false;
      call.on("cancelled", () => cancelled = true);
      for (const frame of events) {
        if (cancelled) return;
        if (!call.write(frame)) await new Promise((r) => call.once("drain", r));
      }
      call.write(Buffer.from([8, 4]));
    },
  });
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(
      `unix:${socket}`,
      ServerCredentials.createInsecure(),
      (err) => err ? reject(err) : resolve(),
    )
  );
  await Deno.stdout.write(new TextEncoder().encode(JSON.stringify({ ready: true }) + "\n"));
  const stop = Promise.withResolvers<void>();
  Deno.addSignalListener("SIGTERM", () => stop.resolve());
  await stop.promise;
  server.forceShutdown();
  await Deno.remove(socket).catch(() => {});
  Deno.exit(0);
}

await main();
