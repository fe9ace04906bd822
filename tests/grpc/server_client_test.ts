// GrpcServer and GrpcChannel end to end over a unix socket: unary and
// server-streaming calls, backpressure, deadlines, cancellation, statuses
// and their messages, Trailers-Only, size limits, and the channel coming back
// after its connection goes away or the server restarts.
import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { GrpcChannel, type GrpcChannelOptions } from "../../src/grpc/client.ts";
import { frameMessage } from "../../src/grpc/message_framing.ts";
import {
  GrpcServer,
  type GrpcServerOptions,
  type MessageSink,
  type MethodHandler,
  type ServerCall,
} from "../../src/grpc/server.ts";
import { GrpcError, STATUS, type StatusCode } from "../../src/grpc/status.ts";
import { FLAG, FRAME_TYPE } from "../../src/h2/frames.ts";
import { buildFrame } from "../../src/h2/frames.ts";
import {
  type Frame,
  grpcRequestFields,
  RawClient,
  settled,
  waitFor,
} from "../_support/raw_h2_client.ts";

const TEXT = new TextEncoder();
const UTF8 = new TextDecoder();

/** A GrpcServer on a temporary unix socket, restartable on the same path. */
interface Harness extends AsyncDisposable {
  readonly path: string;
  server: GrpcServer;
  channel(options?: GrpcChannelOptions): GrpcChannel;
  /** Closes the server (graceful, `graceMs`) and removes its socket. */
  stop(graceMs?: number): Promise<void>;
  /** Starts a new server on the same path. */
  restart(): void;
}

async function startHarness(
  methods: Record<string, MethodHandler>,
  options: Omit<GrpcServerOptions, "methods"> = {},
): Promise<Harness> {
  const dir = await Deno.makeTempDir({ prefix: "grpc-server-client-test-" });
  const path = `${dir}/grpc.sock`;
  const channels: GrpcChannel[] = [];
  const start = () => {
    const server = new GrpcServer({ ...options, methods: new Map(Object.entries(methods)) });
    server.serve(Deno.listen({ transport: "unix", path }));
    return server;
  };
  let running = true;
  const harness: Harness = {
    path,
    server: start(),
    channel(channelOptions) {
      const channel = new GrpcChannel({ transport: "unix", path }, channelOptions);
      channels.push(channel);
      return channel;
    },
    async stop(graceMs = 0) {
      if (!running) return;
      running = false;
      await harness.server.close(graceMs);
      await Deno.remove(path).catch(() => {});
    },
    restart() {
      harness.server = start();
      running = true;
    },
    async [Symbol.asyncDispose]() {
      for (const channel of channels) channel.close();
      await harness.stop();
      await Deno.remove(dir, { recursive: true });
    },
  };
  return harness;
}

function unary(
  handle: (request: Uint8Array, call: ServerCall) => Promise<Uint8Array>,
): MethodHandler {
  return { kind: "unary", handle };
}

function serverStream(
  handle: (
    request: Uint8Array,
    call: ServerCall,
    sink: MessageSink,
  ) => Promise<void>,
): MethodHandler {
  return { kind: "serverStream", handle };
}

/** Resolves when `signal` aborts, with its reason. */
function aborted(signal: AbortSignal): Promise<unknown> {
  if (signal.aborted) return Promise.resolve(signal.reason);
  return new Promise((resolve) =>
    signal.addEventListener("abort", () => resolve(signal.reason), { once: true })
  );
}

async function rejectsWith(
  promise: Promise<unknown>,
  code: StatusCode,
  message?: string | RegExp,
): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof GrpcError, `not a GrpcError: ${err}`);
    assert.equal(err.code, code, `code ${err.code} (${err.message})`);
    if (typeof message === "string") assert.equal(err.message, message);
    else if (message !== undefined) assert.match(err.message, message);
    return true;
  });
}

async function collect(call: AsyncIterable<Uint8Array>): Promise<string[]> {
  const out: string[] = [];
  for await (const m of call) out.push(UTF8.decode(m));
  return out;
}

const echo = unary((request) => Promise.resolve(request));

Deno.test("GrpcChannel.unary() gets the handler's response and passes metadata", async () => {
  await using h = await startHarness({
    "/t.T/Echo": echo,
    "/t.T/Meta": unary((_request, call) => {
      const text = call.metadata("x-text");
      const bin = call.metadata("x-id-bin")[0] as Uint8Array;
      return Promise.resolve(TEXT.encode(`${call.path} ${text.join("|")} ${[...bin]}`));
    }),
  });
  const channel = h.channel();
  assert.equal(UTF8.decode(await channel.unary("/t.T/Echo", TEXT.encode("hello"))), "hello");
  assert.deepEqual(await channel.unary("/t.T/Echo", new Uint8Array(0)), new Uint8Array(0));
  const meta = await channel.unary("/t.T/Meta", new Uint8Array(0), {
    metadata: { "x-text": "a b", "x-id-bin": new Uint8Array([0, 255, 7]) },
  });
  assert.equal(UTF8.decode(meta), "/t.T/Meta a b 0,255,7");
});

Deno.test("GrpcChannel.unary() runs many calls at once on one connection", async () => {
  await using h = await startHarness({ "/t.T/Echo": echo });
  const channel = h.channel();
  const answers = await Promise.all(
    Array.from({ length: 50 }, (_, i) => channel.unary("/t.T/Echo", TEXT.encode(`m${i}`))),
  );
  assert.deepEqual(
    answers.map((a) => UTF8.decode(a)),
    Array.from({ length: 50 }, (_, i) => `m${i}`),
  );
  assert.equal(h.server.connectionCount, 1);
});

Deno.test("GrpcChannel.unary() carries a large request and response through flow control", async () => {
  const big = Uint8Array.from({ length: 3 << 20 }, (_, i) => (i * 7) & 0xff);
  await using h = await startHarness({ "/t.T/Echo": echo }, { maxReceiveMessageBytes: 4 << 20 });
  const answer = await h.channel().unary("/t.T/Echo", big);
  assert.equal(answer.byteLength, big.byteLength);
  assert.deepEqual(answer, big);
});

Deno.test("GrpcChannel.unaryDecoded() reads each large answer in a buffer used again, calls at once included", async () => {
  // Answers of 100-400 KB, told apart by their bytes: each decode sees its own, whole.
  const answer = (seed: number) =>
    Uint8Array.from({ length: 100_000 + seed * 30_000 }, (_, i) => (i * 7 + seed) & 0xff);
  await using h = await startHarness({
    "/t.T/Big": unary((request) => Promise.resolve(answer(request[0]!))),
  });
  const channel = h.channel();
  const sums = (
    bytes: Uint8Array,
  ) => [bytes.byteLength, bytes.reduce((a, b) => (a * 31 + b) % 1e9, 0)];
  const want = Array.from({ length: 10 }, (_, seed) => sums(answer(seed)));
  const buffers = new Set<ArrayBufferLike>();
  for (let round = 0; round < 3; round++) {
    const got = await Promise.all(
      Array.from(
        { length: 10 },
        (_, seed) =>
          channel.unaryDecoded("/t.T/Big", Uint8Array.of(seed), (bytes) => {
            buffers.add(bytes.buffer);
            return sums(bytes);
          }),
      ),
    );
    assert.deepEqual(got, want, `round ${round}`);
  }
  assert.ok(buffers.size < 30, `${buffers.size} buffers for 30 answers: none was used again`);
  // A decode that throws: its error, and the call after it still right.
  await assert.rejects(
    channel.unaryDecoded("/t.T/Big", Uint8Array.of(1), () => {
      throw new RangeError("bad answer");
    }),
    RangeError,
  );
  assert.deepEqual(await channel.unaryDecoded("/t.T/Big", Uint8Array.of(2), sums), want[2]);
});

Deno.test("GrpcChannel.serverStream() yields the messages in order, then ends", async () => {
  await using h = await startHarness({
    "/t.T/Count": serverStream(async (request, _call, sink) => {
      const n = Number(UTF8.decode(request));
      for (let i = 0; i < n; i++) await sink.send(TEXT.encode(`#${i}`));
    }),
  });
  const channel = h.channel();
  assert.deepEqual(await collect(channel.serverStream("/t.T/Count", TEXT.encode("3"))), [
    "#0",
    "#1",
    "#2",
  ]);
  assert.equal(
    (await collect(channel.serverStream("/t.T/Count", TEXT.encode("1000")))).length,
    1000,
  );
  // No message at all: a Trailers-Only OK.
  assert.deepEqual(await collect(channel.serverStream("/t.T/Count", TEXT.encode("0"))), []);
});

Deno.test("GrpcServer sink.send() stays pending while the client does not read, and resumes when it does", async () => {
  const MESSAGE = 1000;
  const HIGH_WATER = 64 * 1024;
  // The client's stream window (DEFAULT_LIMITS.streamWindow) plus the server's
  // backlog, plus slack for message prefixes released early when a write
  // buffer boundary splits a message.
  const BOUND = (1 << 20) + HIGH_WATER + 64 * 1024;
  let sent = 0;
  let handlerSignal: AbortSignal | undefined;
  let handlerDone: Promise<void> | undefined;
  await using h = await startHarness({
    "/t.T/Echo": echo,
    "/t.T/Flood": serverStream((_request, call, sink) => {
      handlerSignal = call.signal;
      handlerDone = (async () => {
        const message = new Uint8Array(MESSAGE);
        while (!call.signal.aborted) {
          await sink.send(message);
          sent++;
        }
      })();
      return handlerDone;
    }),
  }, { streamHighWaterBytes: HIGH_WATER });
  const channel = h.channel();
  const call = channel.serverStream("/t.T/Flood", new Uint8Array(0));
  await waitFor(() => sent > 0, "the first send");
  await settled(() => sent);
  // A round trip on the same connection: the server had every chance to send more.
  await channel.unary("/t.T/Echo", new Uint8Array(0));
  await settled(() => sent);
  const stuckAt = sent;
  assert.ok(stuckAt * MESSAGE <= BOUND, `the server sent ${stuckAt * MESSAGE} bytes unread`);
  assert.ok(stuckAt * MESSAGE >= 1 << 20, `only ${stuckAt * MESSAGE} bytes before blocking`);
  assert.equal(handlerSignal?.aborted, false);

  // Reading makes room again.
  let read = 0;
  for await (const _ of call) {
    if (++read === stuckAt + 100) break;
  }
  assert.ok(sent > stuckAt, "the server went on once the client read");
  // Leaving the loop cancels the call; the handler's pending send settles.
  assert.ok(await aborted(handlerSignal!) instanceof GrpcError);
  await handlerDone;
});

Deno.test("GrpcChannel holds one window for an unread stream of messages larger than a DATA frame", async (t) => {
  for (const size of [64 * 1024, 1 << 20]) {
    await t.step(`${size}-byte messages`, async () => {
      const HIGH_WATER = 64 * 1024;
      let sent = 0;
      await using h = await startHarness({
        "/t.T/Echo": echo,
        "/t.T/Flood": serverStream(async (_request, call, sink) => {
          const message = new Uint8Array(size);
          while (!call.signal.aborted && sent < 200) {
            await sink.send(message);
            sent++;
          }
        }),
      }, { streamHighWaterBytes: HIGH_WATER });
      const channel = h.channel({ maxReceiveMessageBytes: 4 << 20 });
      const call = channel.serverStream("/t.T/Flood", new Uint8Array(0));
      await waitFor(() => sent > 0, "the first send");
      await settled(() => sent);
      await channel.unary("/t.T/Echo", new Uint8Array(0));
      await settled(() => sent);
      // The client's stream window (1 MiB), the server's backlog, one message in flight.
      const bound = (1 << 20) + HIGH_WATER + size;
      assert.ok(sent * size <= bound, `the server sent ${sent * size} bytes to an unread call`);
      call.cancel();
    });
  }
});

Deno.test("GrpcChannel delivers messages larger than its window to a reader that pauses", async () => {
  const SIZE = 3 << 20;
  await using h = await startHarness({
    "/t.T/Echo": echo,
    "/t.T/Big": serverStream(async (_request, _call, sink) => {
      for (let i = 0; i < 4; i++) await sink.send(new Uint8Array(SIZE).fill(i + 1));
    }),
  });
  const channel = h.channel({ maxReceiveMessageBytes: 4 << 20 });
  const got: number[] = [];
  for await (const m of channel.serverStream("/t.T/Big", new Uint8Array(0))) {
    assert.equal(m.byteLength, SIZE);
    got.push(m[0]!, m[SIZE - 1]!);
    // Pause: a round trip on the same connection while the stream waits unread.
    await channel.unary("/t.T/Echo", new Uint8Array(1));
  }
  assert.deepEqual(got, [1, 1, 2, 2, 3, 3, 4, 4]);
});

/** A handler that waits for its call to end, and the call it serves. */
function waitingHandler(): { handler: MethodHandler; calls: ServerCall[] } {
  const calls: ServerCall[] = [];
  const handler = unary(async (_request, call) => {
    calls.push(call);
    await aborted(call.signal);
    return new Uint8Array(0);
  });
  return { handler, calls };
}

/** Sends one call to `/t.T/Wait` from a raw client with this `grpc-timeout`. */
async function rawCallWithTimeout(client: RawClient, timeout: string): Promise<void> {
  await client.handshake();
  await client.write(
    client.headers(1, grpcRequestFields("/t.T/Wait", [["grpc-timeout", timeout]]), false),
    buildFrame(FRAME_TYPE.DATA, FLAG.END_STREAM, 1, frameMessage(new Uint8Array(0)).bytes),
  );
}

Deno.test("GrpcServer ends a call at its grpc-timeout on its clock: the handler's signal says DEADLINE_EXCEEDED", async (t) => {
  const cases = [
    { timeout: "50m", ms: 50 },
    // Past setTimeout's 2^31-1 ms, where a bare timer fires at once.
    { timeout: "99999999H", ms: 99_999_999 * 3_600_000 },
  ];
  for (const c of cases) {
    await t.step(`grpc-timeout ${c.timeout}`, async () => {
      const clock = new FakeClock();
      const { handler, calls } = waitingHandler();
      await using h = await startHarness({ "/t.T/Wait": handler }, { clock });
      // A raw client never cancels: only the server's deadline can end the call.
      await using client = await RawClient.connect(h.path);
      await rawCallWithTimeout(client, c.timeout);
      await waitFor(() => calls.length === 1, "the handler");
      clock.advance(c.ms - 1);
      assert.equal(calls[0]!.signal.aborted, false, "not before its deadline");
      clock.advance(1);
      assert.equal(calls[0]!.signal.aborted, true, "at its deadline");
      const reason = calls[0]!.signal.reason;
      assert.ok(reason instanceof GrpcError);
      assert.equal(reason.code, STATUS.DEADLINE_EXCEEDED);
      const answer = await client.next((f) => f.type === FRAME_TYPE.HEADERS && f.streamId === 1);
      const fields = new Map(client.decodeHeaders(answer!));
      assert.equal(fields.get("grpc-status"), String(STATUS.DEADLINE_EXCEEDED));
      assert.ok(answer!.flags & FLAG.END_STREAM);
    });
  }
});

Deno.test("GrpcChannel fails a call DEADLINE_EXCEEDED at timeoutMs on its clock, and the handler sees the cancel", async (t) => {
  // 30 days: past setTimeout's 2^31-1 ms, where a bare timer fires at once.
  for (const ms of [50, 30 * 24 * 3_600_000]) {
    await t.step(`timeoutMs ${ms}`, async () => {
      const clock = new FakeClock();
      const { handler, calls } = waitingHandler();
      // The server's clock never moves: only the client's deadline can fire.
      await using h = await startHarness({ "/t.T/Wait": handler, "/t.T/Echo": echo }, {
        clock: new FakeClock(),
      });
      const channel = h.channel({ clock });
      const result: { outcome?: unknown } = {};
      const call = channel.unary("/t.T/Wait", new Uint8Array(0), { timeoutMs: ms }).then(
        () => result.outcome = "answered",
        (err) => result.outcome = err,
      );
      await waitFor(() => calls.length === 1, "the handler");
      clock.advance(ms - 1);
      // A call after it on the same connection comes back first.
      assert.deepEqual(await channel.unary("/t.T/Echo", TEXT.encode("hi")), TEXT.encode("hi"));
      assert.ok(!("outcome" in result), "not before its deadline");
      clock.advance(1);
      await call;
      const outcome = result.outcome;
      assert.ok(outcome instanceof GrpcError, `${outcome}`);
      assert.equal(outcome.code, STATUS.DEADLINE_EXCEEDED);
      const why = await aborted(calls[0]!.signal);
      assert.ok(why instanceof GrpcError);
      assert.equal(why.code, STATUS.CANCELLED, "the client's reset reached the server");
    });
  }
});

Deno.test("GrpcServer rejects a malformed grpc-timeout with INVALID_ARGUMENT", async () => {
  await using h = await startHarness({ "/t.T/Echo": echo });
  await using client = await RawClient.connect(h.path);
  await client.handshake();
  await client.write(
    client.headers(1, grpcRequestFields("/t.T/Echo", [["grpc-timeout", "soon"]]), false),
    buildFrame(FRAME_TYPE.DATA, FLAG.END_STREAM, 1, frameMessage(new Uint8Array(0)).bytes),
  );
  const answer = await client.next((f) => f.type === FRAME_TYPE.HEADERS && f.streamId === 1);
  const fields = new Map(client.decodeHeaders(answer!));
  assert.equal(fields.get("grpc-status"), String(STATUS.INVALID_ARGUMENT));
  assert.equal(fields.get("grpc-message"), 'Cannot parse grpc-timeout "soon"');
});

Deno.test("GrpcChannel cancels through its AbortSignal: the client gets CANCELLED, the handler's signal aborts", async () => {
  let reason: Promise<unknown> | undefined;
  await using h = await startHarness({
    "/t.T/Wait": unary(async (_request, call) => {
      reason = aborted(call.signal);
      await reason;
      return new Uint8Array(0);
    }),
  });
  const controller = new AbortController();
  const pending = h.channel().unary("/t.T/Wait", new Uint8Array(0), { signal: controller.signal });
  await waitFor(() => reason !== undefined, "the handler");
  controller.abort();
  await rejectsWith(pending, STATUS.CANCELLED);
  const why = await reason;
  assert.ok(why instanceof GrpcError);
  assert.equal(why.code, STATUS.CANCELLED);
  assert.equal(why.message, "call cancelled by the client");
});

Deno.test("GrpcChannel fails a call whose signal is already aborted with CANCELLED", async () => {
  await using h = await startHarness({ "/t.T/Echo": echo });
  await rejectsWith(
    h.channel().unary("/t.T/Echo", new Uint8Array(0), { signal: AbortSignal.abort() }),
    STATUS.CANCELLED,
  );
});

Deno.test("GrpcChannel cancels a call whose signal aborts while the channel connects", async () => {
  let started = 0;
  await using h = await startHarness({
    "/t.T/Wait": unary(async (_request, call) => {
      started++;
      await aborted(call.signal);
      return new Uint8Array(0);
    }),
  });
  const channel = h.channel();
  const controller = new AbortController();
  // The channel has no connection yet: abort lands while it dials.
  const pending = channel.unary("/t.T/Wait", new Uint8Array(0), { signal: controller.signal });
  controller.abort();
  await rejectsWith(pending, STATUS.CANCELLED);
  // The connection still serves.
  assert.deepEqual(
    await channel.unary("/t.T/Wait", new Uint8Array(0), { timeoutMs: 1 }).catch((e) => e.code),
    STATUS.DEADLINE_EXCEEDED,
  );
  assert.ok(started <= 1);
});

Deno.test("GrpcChannel.serverStream() cancel() ends the call on the server, also before iterating", async (t) => {
  for (const iterateFirst of [true, false]) {
    await t.step(iterateFirst ? "after a message" : "before iterating", async () => {
      let reason: Promise<unknown> | undefined;
      await using h = await startHarness({
        "/t.T/Hold": serverStream(async (_request, call, sink) => {
          reason = aborted(call.signal);
          await sink.send(TEXT.encode("first"));
          await reason;
        }),
      });
      const call = h.channel().serverStream("/t.T/Hold", new Uint8Array(0));
      if (iterateFirst) {
        await rejectsWith(
          (async () => {
            for await (const m of call) {
              assert.equal(UTF8.decode(m), "first");
              call.cancel();
            }
          })(),
          STATUS.CANCELLED,
        );
      } else {
        await waitFor(() => reason !== undefined, "the handler");
        call.cancel();
      }
      const why = await reason;
      assert.ok(why instanceof GrpcError);
      assert.equal(why.code, STATUS.CANCELLED);
    });
  }
});

Deno.test("GrpcChannel carries a status and its percent-encoded message from the handler", async (t) => {
  const cases: { name: string; code: StatusCode; message: string }[] = [
    { name: "ASCII", code: STATUS.NOT_FOUND, message: 'pod "default/web" not found' },
    {
      name: "non-ASCII",
      code: STATUS.FAILED_PRECONDITION,
      message: "caf\u00e9 \u4e2d\u6587 \u{1F600}",
    },
    { name: "percent signs", code: STATUS.INVALID_ARGUMENT, message: "100% sure, %41 is not A" },
    { name: "control characters", code: STATUS.ABORTED, message: "line one\nline two\ttab" },
    { name: "empty", code: STATUS.PERMISSION_DENIED, message: "" },
  ];
  for (const c of cases) {
    await t.step(c.name, async () => {
      await using h = await startHarness({
        "/t.T/Fail": unary(() => Promise.reject(new GrpcError(c.code, c.message))),
        "/t.T/FailLate": serverStream(async (_request, _call, sink) => {
          await sink.send(TEXT.encode("one"));
          throw new GrpcError(c.code, c.message);
        }),
      });
      const channel = h.channel();
      await rejectsWith(channel.unary("/t.T/Fail", new Uint8Array(0)), c.code, c.message);
      // After a message, the status travels in trailers.
      const got: string[] = [];
      await rejectsWith(
        (async () => {
          for await (const m of channel.serverStream("/t.T/FailLate", new Uint8Array(0))) {
            got.push(UTF8.decode(m));
          }
        })(),
        c.code,
        c.message,
      );
      assert.deepEqual(got, ["one"]);
    });
  }
});

Deno.test("GrpcServer answers an error before any message as Trailers-Only", async () => {
  await using h = await startHarness({
    "/t.T/Fail": unary(() => Promise.reject(new GrpcError(STATUS.NOT_FOUND, "gone 100%"))),
  });
  await using client = await RawClient.connect(h.path);
  await client.handshake();
  await client.write(
    client.headers(1, grpcRequestFields("/t.T/Fail"), false),
    buildFrame(FRAME_TYPE.DATA, FLAG.END_STREAM, 1, frameMessage(new Uint8Array(0)).bytes),
  );
  const frames: Frame[] = [];
  const answer = await client.next(
    (f) => f.type === FRAME_TYPE.HEADERS && f.streamId === 1,
    frames,
  );
  assert.ok(answer!.flags & FLAG.END_STREAM, "one HEADERS frame ends the stream");
  assert.equal(frames.filter((f) => f.type === FRAME_TYPE.DATA).length, 0);
  assert.deepEqual(client.decodeHeaders(answer!), [
    [":status", "200"],
    ["content-type", "application/grpc"],
    ["grpc-status", "5"],
    ["grpc-message", "gone 100%25"],
  ]);
});

Deno.test("GrpcServer answers an unknown method with UNIMPLEMENTED", async () => {
  await using h = await startHarness({ "/t.T/Echo": echo });
  const channel = h.channel();
  await rejectsWith(
    channel.unary("/t.T/Nope", new Uint8Array(0)),
    STATUS.UNIMPLEMENTED,
    'Unknown method "/t.T/Nope"',
  );
  await rejectsWith(collect(channel.serverStream("/x/y", new Uint8Array(0))), STATUS.UNIMPLEMENTED);
});

Deno.test("GrpcServer and GrpcChannel enforce message size limits in both directions", async (t) => {
  await using h = await startHarness({
    "/t.T/Echo": echo,
    "/t.T/Big": unary((request) => Promise.resolve(new Uint8Array(Number(UTF8.decode(request))))),
  }, { maxReceiveMessageBytes: 1000, maxSendMessageBytes: 5000 });
  await t.step("request at the server's receive limit", async () => {
    const answer = await h.channel().unary("/t.T/Echo", new Uint8Array(1000));
    assert.equal(answer.byteLength, 1000);
  });
  await t.step("request above the server's receive limit", async () => {
    await rejectsWith(
      h.channel().unary("/t.T/Echo", new Uint8Array(1001)),
      STATUS.RESOURCE_EXHAUSTED,
      "Cannot accept a message of 1001 bytes: the limit is 1000",
    );
  });
  await t.step("response above the server's send limit", async () => {
    await rejectsWith(
      h.channel().unary("/t.T/Big", TEXT.encode("5001")),
      STATUS.RESOURCE_EXHAUSTED,
      "Cannot send a message of 5001 bytes: the limit is 5000",
    );
  });
  await t.step("response above the client's receive limit", async () => {
    const channel = h.channel({ maxReceiveMessageBytes: 3000 });
    assert.equal((await channel.unary("/t.T/Big", TEXT.encode("3000"))).byteLength, 3000);
    await rejectsWith(
      channel.unary("/t.T/Big", TEXT.encode("3001")),
      STATUS.RESOURCE_EXHAUSTED,
      "Cannot accept a message of 3001 bytes: the limit is 3000",
    );
    // The channel goes on.
    assert.equal((await channel.unary("/t.T/Big", TEXT.encode("10"))).byteLength, 10);
  });
});

Deno.test('GrpcServer turns a handler\'s non-GrpcError into INTERNAL "internal error"', async () => {
  const reported: [string, unknown][] = [];
  await using h = await startHarness({
    "/t.T/Throw": unary(() => Promise.reject(new RangeError("secret detail"))),
    "/t.T/ThrowSync": unary(() => {
      throw new TypeError("sync detail");
    }),
    "/t.T/ThrowStream": serverStream(async (_request, _call, sink) => {
      await sink.send(TEXT.encode("x"));
      throw new Error("late detail");
    }),
  }, { observer: { handlerError: (path, err) => reported.push([path, err]) } });
  const channel = h.channel();
  await rejectsWith(
    channel.unary("/t.T/Throw", new Uint8Array(0)),
    STATUS.INTERNAL,
    "internal error",
  );
  await rejectsWith(
    channel.unary("/t.T/ThrowSync", new Uint8Array(0)),
    STATUS.INTERNAL,
    "internal error",
  );
  await rejectsWith(
    collect(channel.serverStream("/t.T/ThrowStream", new Uint8Array(0))),
    STATUS.INTERNAL,
    "internal error",
  );
  assert.deepEqual(reported.map(([path, err]) => [path, (err as Error).message]), [
    ["/t.T/Throw", "secret detail"],
    ["/t.T/ThrowSync", "sync detail"],
    ["/t.T/ThrowStream", "late detail"],
  ]);
});

Deno.test("GrpcChannel reconnects after the server closes its connection with GOAWAY", async () => {
  await using h = await startHarness({ "/t.T/Echo": echo }, { limits: { idleTimeoutMs: 100 } });
  const channel = h.channel();
  assert.equal(UTF8.decode(await channel.unary("/t.T/Echo", TEXT.encode("a"))), "a");
  // The idle timeout makes the server shut the connection down (GOAWAY, PING, GOAWAY, close).
  await waitFor(() => h.server.connectionCount === 0, "the server to close the idle connection");
  assert.equal(UTF8.decode(await channel.unary("/t.T/Echo", TEXT.encode("b"))), "b");
  assert.equal(h.server.connectionCount, 1);
});

Deno.test("GrpcChannel fails UNAVAILABLE while the server is down and works again after it restarts on the same path", async () => {
  await using h = await startHarness({ "/t.T/Echo": echo });
  const channel = h.channel();
  assert.equal(UTF8.decode(await channel.unary("/t.T/Echo", TEXT.encode("a"))), "a");
  await h.stop(1000);
  await rejectsWith(channel.unary("/t.T/Echo", TEXT.encode("b")), STATUS.UNAVAILABLE);
  h.restart();
  assert.equal(UTF8.decode(await channel.unary("/t.T/Echo", TEXT.encode("c"))), "c");
});

Deno.test("GrpcChannel sees a stream cut by a server shutdown end UNAVAILABLE or OK, never hang", async () => {
  let sent = 0;
  await using h = await startHarness({
    "/t.T/Hold": serverStream(async (_request, call, sink) => {
      await sink.send(TEXT.encode("first"));
      sent++;
      await aborted(call.signal);
    }),
  });
  const channel = h.channel();
  const call = channel.serverStream("/t.T/Hold", new Uint8Array(0));
  const reading = collect(call).then(() => STATUS.OK, (err: GrpcError) => err.code);
  await waitFor(() => sent === 1, "the first message");
  // The handler never ends: the grace period runs out and the connection closes.
  await h.stop(100);
  assert.equal(await reading, STATUS.UNAVAILABLE);
});

Deno.test("GrpcChannel.serverStream() that is never iterated leaves no unhandled rejection when the server is missing", async () => {
  const dir = await Deno.makeTempDir({ prefix: "grpc-server-client-test-" });
  try {
    using channel = new GrpcChannel({ transport: "unix", path: `${dir}/missing.sock` });
    const call = channel.serverStream("/t.T/Hold", new Uint8Array(0));
    // The same dial fails for a unary call; by then the stream's start failed too.
    await rejectsWith(channel.unary("/t.T/Echo", new Uint8Array(0)), STATUS.UNAVAILABLE);
    await rejectsWith(collect(call), STATUS.UNAVAILABLE);
    channel.serverStream("/t.T/Hold", new Uint8Array(0)); // never iterated nor cancelled
    await rejectsWith(channel.unary("/t.T/Echo", new Uint8Array(0)), STATUS.UNAVAILABLE);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("GrpcServer answers a request that is not gRPC with a plain HTTP error", async (t) => {
  const cases: { name: string; fields: [string, string][]; body: boolean; status: string }[] = [
    {
      name: "GET without content-type",
      fields: [[":method", "GET"], [":scheme", "http"], [":path", "/"], [":authority", "x"]],
      body: false,
      status: "415",
    },
    {
      name: "POST of JSON, with a body",
      fields: [
        [":method", "POST"],
        [":scheme", "http"],
        [":path", "/t.T/Echo"],
        ["content-type", "application/json"],
      ],
      body: true,
      status: "415",
    },
    {
      name: "GET of application/grpc",
      fields: [
        [":method", "GET"],
        [":scheme", "http"],
        [":path", "/t.T/Echo"],
        ["content-type", "application/grpc"],
      ],
      body: false,
      status: "405",
    },
  ];
  for (const c of cases) {
    await t.step(c.name, async () => {
      await using h = await startHarness({ "/t.T/Echo": echo });
      await using client = await RawClient.connect(h.path);
      await client.handshake();
      await client.write(client.headers(1, c.fields, !c.body));
      if (c.body) {
        await client.write(buildFrame(FRAME_TYPE.DATA, FLAG.END_STREAM, 1, TEXT.encode("{}")));
      }
      const headers = await client.next((f) => f.type === FRAME_TYPE.HEADERS && f.streamId === 1);
      const fields = new Map(client.decodeHeaders(headers!));
      assert.equal(fields.get(":status"), c.status);
      assert.equal(fields.get("content-type"), "text/plain");
      const data = await client.next((f) => f.type === FRAME_TYPE.DATA && f.streamId === 1);
      assert.match(UTF8.decode(data!.payload), /This is a gRPC server/);
      assert.ok(data!.flags & FLAG.END_STREAM);
    });
  }
});

Deno.test("GrpcServer closes connections beyond maxConnections at once and reports them", async () => {
  let refused = 0;
  await using h = await startHarness({ "/t.T/Echo": echo }, {
    maxConnections: 1,
    observer: { connectionRefused: () => refused++ },
  });
  await using first = await RawClient.connect(h.path);
  await first.handshake();
  await using second = await RawClient.connect(h.path);
  assert.deepEqual(await second.readToEnd(), []);
  assert.equal(refused, 1);
  // The first connection still serves.
  await first.write(
    first.headers(1, grpcRequestFields("/t.T/Echo"), false),
    buildFrame(FRAME_TYPE.DATA, FLAG.END_STREAM, 1, frameMessage(new Uint8Array([9])).bytes),
  );
  const data = await first.next((f) => f.type === FRAME_TYPE.DATA && f.streamId === 1);
  assert.deepEqual([...data!.payload], [0, 0, 0, 0, 1, 9]);
});

Deno.test("GrpcChannel.close() closes every connection it opened, not only the latest", async () => {
  const held: AbortSignal[] = [];
  await using h = await startHarness({
    "/t.T/Echo": echo,
    "/t.T/Hold": unary(async (_request, call) => {
      held.push(call.signal);
      await aborted(call.signal);
      return new Uint8Array(0);
    }),
  }, { limits: { maxConcurrentStreams: 2 } });
  const channel = h.channel();
  await channel.unary("/t.T/Echo", new Uint8Array(1)); // the server's SETTINGS are known
  const calls = [0, 1].map(() => channel.unary("/t.T/Hold", new Uint8Array(0)).catch((e) => e));
  await waitFor(() => held.length === 2, "two held calls");
  // At the peer's limit the call fails and the channel's next call dials a second connection.
  await rejectsWith(channel.unary("/t.T/Echo", new Uint8Array(1)), STATUS.UNAVAILABLE);
  await channel.unary("/t.T/Echo", new Uint8Array(1));
  assert.equal(h.server.connectionCount, 2);
  channel.close();
  await waitFor(() => h.server.connectionCount === 0, "the server to see both connections close");
  assert.deepEqual(held.map((s) => s.aborted), [true, true]);
  for (const result of await Promise.all(calls)) {
    assert.ok(result instanceof GrpcError && result.code === STATUS.UNAVAILABLE, String(result));
  }
});

Deno.test("GrpcChannel reports a grpc-status it does not know as UNKNOWN, keeping the message", async () => {
  await using h = await startHarness({
    "/t.T/Future": unary(() => {
      throw new GrpcError(17 as StatusCode, "a code from a newer gRPC");
    }),
  });
  await rejectsWith(
    h.channel().unary("/t.T/Future", new Uint8Array()),
    STATUS.UNKNOWN,
    "a code from a newer gRPC",
  );
});

Deno.test("GrpcServer writes a unary response's headers, message and trailers in one write", async () => {
  // Every write the server makes on its connection, as bytes.
  const writes: Uint8Array[] = [];
  const dir = await Deno.makeTempDir({ prefix: "grpc-one-write-test-" });
  const path = `${dir}/grpc.sock`;
  const inner = Deno.listen({ transport: "unix", path });
  const listener = {
    accept: async () => {
      const conn = await inner.accept();
      return new Proxy(conn, {
        get(target, key) {
          if (key === "write") {
            return (bytes: Uint8Array) => {
              writes.push(bytes.slice());
              return target.write(bytes);
            };
          }
          const value = Reflect.get(target, key, target);
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
    },
    close: () => inner.close(),
  } as unknown as Deno.Listener;
  const server = new GrpcServer({
    methods: new Map([["/t.T/Echo", unary((request) => Promise.resolve(request))]]),
  });
  server.serve(listener);
  try {
    await using client = await RawClient.connect(path);
    await client.handshake();
    await client.write(
      client.headers(1, grpcRequestFields("/t.T/Echo"), false),
      buildFrame(FRAME_TYPE.DATA, FLAG.END_STREAM, 1, frameMessage(TEXT.encode("hi")).bytes),
    );
    await client.next((f) => f.type === FRAME_TYPE.HEADERS && (f.flags & FLAG.END_STREAM) !== 0);
    const withStream1 = writes.filter((w) => framesOf(w).some((f) => f.streamId === 1));
    assert.equal(withStream1.length, 1, "one write carries the whole response");
    assert.deepEqual(framesOf(withStream1[0]!).map((f) => [f.type, f.flags & FLAG.END_STREAM]), [
      [FRAME_TYPE.HEADERS, 0],
      [FRAME_TYPE.DATA, 0],
      [FRAME_TYPE.HEADERS, FLAG.END_STREAM],
    ]);
  } finally {
    await server.close(0);
    await Deno.remove(dir, { recursive: true });
  }
});

/** The frames of one write: type, flags and stream of each. */
function framesOf(bytes: Uint8Array): { type: number; flags: number; streamId: number }[] {
  const out = [];
  for (let at = 0; at + 9 <= bytes.byteLength;) {
    const length = (bytes[at]! << 16) | (bytes[at + 1]! << 8) | bytes[at + 2]!;
    const streamId = ((bytes[at + 5]! & 0x7f) << 24) | (bytes[at + 6]! << 16) |
      (bytes[at + 7]! << 8) | bytes[at + 8]!;
    out.push({ type: bytes[at + 3]!, flags: bytes[at + 4]!, streamId });
    at += 9 + length;
  }
  return out;
}
