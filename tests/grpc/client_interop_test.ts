// Our GrpcChannel against a real gRPC server that is not ours: grpc-go 1.33
// from Debian's golang-google-grpc-dev (tests/grpc/go/peerserver, built in
// GOPATH mode with the interop tests' buildGo). Unary, server streaming,
// statuses with messages, and the server stopping gracefully (GOAWAY, PING,
// GOAWAY) with a stream open, then starting again on the same socket: the
// client must end the stream OK or UNAVAILABLE, never hang or crash, and its
// next call must work. grpc-go is what containerd speaks, so this is the
// CRI client's case too. Without Go or the grpc-go sources the test is
// ignored, or fails naming the apt packages when PODS_API_REQUIRE_PEERS=1
// (tests/_support/peers.ts).
import assert from "node:assert/strict";
import { GrpcChannel } from "../../src/grpc/client.ts";
import { GrpcError, STATUS, type StatusCode } from "../../src/grpc/status.ts";
import { fileURLToPath } from "node:url";
import { buildGo } from "../interop/_peer_harness.ts";
import { PEERS, requirePeer } from "../_support/peers.ts";

const TEXT = new TextEncoder();
const UTF8 = new TextDecoder();
const goPeer = requirePeer(PEERS.go, PEERS.grpcGo);
const grpcioPeer = requirePeer(PEERS.grpcio);
/** Far above any expected wait: turns a hang into a failure that says so. */
const HANG_GUARD_MS = 30_000;

/** A running peerserver. */
interface Peer {
  readonly output: string[];
  /** SIGTERM, then its exit; resolves with everything it printed. */
  stop(): Promise<{ code: number; stdout: string; stderr: string }>;
}

/** A peer server program: how to start it on a socket. */
interface PeerProgram {
  readonly cmd: string;
  args(socket: string): string[];
  /**
   * The status the server itself sends to calls that arrive while it stops,
   * if it answers them rather than refusing the stream: C-core answers
   * Trailers-Only CANCELLED "CANCELLED" (grpc-go refuses them, so the client
   * retries or sees UNAVAILABLE).
   */
  readonly shutdownStatus?: readonly [StatusCode, string];
  /**
   * Whether the peer's own process may be killed for hanging in its stop:
   * grpcio's server.stop() can stall on a loaded machine, which says nothing
   * about our client (its calls are checked on their own).
   */
  readonly stopMayHang?: boolean;
}

async function startPeer(program: PeerProgram, socket: string): Promise<Peer> {
  const child = new Deno.Command(program.cmd, {
    args: program.args(socket),
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const output: string[] = [];
  let onLine: (() => void) | undefined;
  const stdout = (async () => {
    let pending = "";
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) {
      pending += chunk;
      const lines = pending.split("\n");
      pending = lines.pop()!;
      output.push(...lines);
      onLine?.();
    }
  })();
  const stderr = new Response(child.stderr).text();
  const finished = Promise.all([child.status, stdout, stderr]);
  // Ready once it printed so, or failed once it exited.
  await Promise.race([
    new Promise<void>((resolve) => {
      onLine = () => output.includes("ready") && resolve();
      onLine();
    }),
    finished,
  ]);
  if (!output.includes("ready")) {
    const [status, , err] = await finished;
    throw new Error(`${program.cmd} exited with ${status.code} before it was ready: ${err}`);
  }
  let stopped: Promise<{ code: number; stdout: string; stderr: string }> | undefined;
  return {
    output,
    stop() {
      stopped ??= (async () => {
        try {
          child.kill("SIGTERM");
        } catch {
          // already gone
        }
        // A server that does not finish its stop is killed, so that the
        // test reports what hung instead of hanging in its cleanup.
        const timer = setTimeout(() => {
          try {
            child.kill("SIGKILL");
          } catch {
            // already gone
          }
        }, HANG_GUARD_MS);
        const [status, , err] = await finished;
        clearTimeout(timer);
        return { code: status.code, stdout: output.join("\n"), stderr: err };
      })();
      return stopped;
    },
  };
}

async function guard<T>(promise: Promise<T>, what: string | (() => string)): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`Hung: ${typeof what === "string" ? what : what()}`)),
          HANG_GUARD_MS,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

async function rejectsWith(
  promise: Promise<unknown>,
  code: StatusCode,
  message?: string,
): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof GrpcError, `not a GrpcError: ${err}`);
    assert.equal(err.code, code, `code ${err.code} (${err.message})`);
    if (message !== undefined) assert.equal(err.message, message);
    return true;
  });
}

/** Reads a stream to its end: its messages, and how it ended. */
async function drain(
  call: AsyncIterable<Uint8Array>,
  onMessage?: (m: string) => void,
): Promise<{ messages: string[]; code: StatusCode; message: string }> {
  const messages: string[] = [];
  try {
    for await (const m of call) {
      messages.push(UTF8.decode(m));
      onMessage?.(UTF8.decode(m));
    }
    return { messages, code: STATUS.OK, message: "" };
  } catch (err) {
    if (!(err instanceof GrpcError)) throw err;
    return { messages, code: err.code, message: err.message };
  }
}

/** The suite each peer server runs: `label` names it in messages. */
async function talkToPeer(t: Deno.TestContext, program: PeerProgram, label: string): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "grpc-client-interop-" });
  const socket = `${dir}/peer.sock`;
  let peer = await startPeer(program, socket);
  const channel = new GrpcChannel({ transport: "unix", path: socket });
  try {
    await t.step("unary, small and past the 64 KiB initial window", async () => {
      assert.equal(UTF8.decode(await channel.unary("/t.T/Echo", TEXT.encode("hello"))), "hello");
      const big = Uint8Array.from({ length: 1 << 20 }, (_, i) => (i * 13) & 0xff);
      assert.deepEqual(await channel.unary("/t.T/Echo", big), big);
      assert.deepEqual(await channel.unary("/t.T/Echo", new Uint8Array(0)), new Uint8Array(0));
    });

    await t.step("server streaming", async () => {
      const got = await drain(channel.serverStream("/t.T/Count", TEXT.encode("2000")));
      assert.equal(got.code, STATUS.OK, got.message);
      assert.equal(got.messages.length, 2000);
      assert.equal(got.messages[1999], "#1999");
      assert.deepEqual(await drain(channel.serverStream("/t.T/Count", TEXT.encode("0"))), {
        messages: [],
        code: STATUS.OK,
        message: "",
      });
    });

    await t.step("statuses with messages, non-ASCII and percent signs included", async () => {
      for (const message of ['pod "a" not found', "caf\u00e9 100% \u4e2d\u6587 \u{1F600}", ""]) {
        await rejectsWith(
          channel.unary("/t.T/Fail", TEXT.encode(message)),
          STATUS.NOT_FOUND,
          message,
        );
      }
      await rejectsWith(channel.unary("/t.T/Nope", new Uint8Array(0)), STATUS.UNIMPLEMENTED);
      const streamed = await drain(channel.serverStream("/t.T/Count", TEXT.encode("x")));
      assert.equal(streamed.code, STATUS.INVALID_ARGUMENT);
    });

    await t.step("deadline and cancel", async () => {
      await rejectsWith(
        drain(channel.serverStream("/t.T/HoldForever", new Uint8Array(0), { timeoutMs: 50 }))
          .then((r) => {
            if (r.code !== STATUS.OK) throw new GrpcError(r.code, r.message);
          }),
        STATUS.DEADLINE_EXCEEDED,
      );
      const controller = new AbortController();
      const got = await guard(
        drain(
          channel.serverStream("/t.T/HoldForever", new Uint8Array(0), {
            signal: controller.signal,
          }),
          () => controller.abort(),
        ),
        "a cancelled stream",
      );
      assert.deepEqual([got.messages, got.code], [["#0"], STATUS.CANCELLED]);
    });

    const cases: { name: string; method: string; expect: StatusCode[] }[] = [
      {
        name: "graceful stop mid-stream, the handler finishing: the stream ends OK",
        method: "/t.T/Hold",
        expect: [STATUS.OK],
      },
      {
        name: "graceful stop mid-stream, the handler never finishing: UNAVAILABLE",
        method: "/t.T/HoldForever",
        expect: [STATUS.UNAVAILABLE],
      },
    ];
    for (const c of cases) {
      await t.step(c.name, async () => {
        let first!: () => void;
        const firstSeen = new Promise<void>((resolve) => first = resolve);
        const reading = drain(channel.serverStream(c.method, new Uint8Array(0)), first);
        await guard(firstSeen, "the first message");
        const exited = peer.stop();
        const got = await guard(reading, "the stream across the server's stop");
        assert.ok(c.expect.includes(got.code), `ended ${got.code}: ${got.message}`);
        assert.equal(got.messages[0], "#0");
        if (got.code === STATUS.OK) assert.deepEqual(got.messages, ["#0", "bye"]);
        // The server could finish its stop: our client let go of the connection.
        const exit = await guard(exited, `${label}'s stop`);
        assert.equal(exit.code, 0, exit.stderr);
        assert.ok(exit.stdout.includes("stopped"));

        // While it is down, calls fail UNAVAILABLE; once it is back, they work.
        await rejectsWith(channel.unary("/t.T/Echo", TEXT.encode("down")), STATUS.UNAVAILABLE);
        peer = await startPeer(program, socket);
        const again = await guard(channel.unary("/t.T/Echo", TEXT.encode("again")), "a call");
        assert.equal(UTF8.decode(again), "again");
      });
    }

    await t.step(
      "a unary call in flight across a graceful stop ends OK or UNAVAILABLE",
      async () => {
        const controller = new AbortController();
        const inFlight = channel.serverStream("/t.T/HoldForever", new Uint8Array(0), {
          signal: controller.signal,
        });
        let first!: () => void;
        const firstSeen = new Promise<void>((resolve) => first = resolve);
        const reading = drain(inFlight, first);
        await guard(firstSeen, "the first message");
        // Many calls racing the stop: each ends OK or UNAVAILABLE, none hangs.
        const exited = peer.stop();
        const calls = Array.from(
          { length: 20 },
          (_, i) =>
            channel.unary("/t.T/Echo", TEXT.encode(`c${i}`)).then(
              (r) => UTF8.decode(r) === `c${i}` ? "OK" : "wrong answer",
              (err: GrpcError) =>
                err.code === STATUS.UNAVAILABLE
                  ? "UNAVAILABLE"
                  : program.shutdownStatus !== undefined &&
                      err.code === program.shutdownStatus[0] &&
                      err.message === program.shutdownStatus[1]
                  ? "the server's shutdown status"
                  : `${err.code} ${err.message}`,
            ),
        );
        const outcomes = await guard(Promise.all(calls), "calls across the stop");
        assert.deepEqual(
          outcomes.filter((o) =>
            o !== "OK" && o !== "UNAVAILABLE" && o !== "the server's shutdown status"
          ),
          [],
        );
        assert.equal(
          (await guard(
            reading,
            () => `the held stream; the peer printed ${JSON.stringify(peer.output)}`,
          )).code,
          STATUS.UNAVAILABLE,
        );
        const exit = await guard(exited, `${label}'s stop`);
        if (!program.stopMayHang || exit.code !== 137) {
          assert.equal(exit.code, 0, `stdout: ${exit.stdout}\nstderr: ${exit.stderr}`);
        }
        peer = await startPeer(program, socket);
        assert.equal(UTF8.decode(await channel.unary("/t.T/Echo", TEXT.encode("z"))), "z");
      },
    );
  } finally {
    channel.close();
    await peer.stop();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test({
  name: goPeer.name(
    "GrpcChannel talks to a grpc-go server: unary, streaming, statuses, graceful stop and restart",
  ),
  ignore: goPeer.ignore,
  async fn(t) {
    goPeer.check();
    const binary = await buildGo("./tests/grpc/go/peerserver");
    await talkToPeer(
      t,
      { cmd: binary, args: (socket) => ["-socket", socket, "-grace", "500ms"] },
      "grpc-go",
    );
  },
});

Deno.test({
  name: grpcioPeer.name(
    "GrpcChannel talks to a python3-grpcio server: unary, streaming, statuses, graceful stop and restart",
  ),
  ignore: grpcioPeer.ignore,
  async fn(t) {
    grpcioPeer.check();
    const script = fileURLToPath(new URL("./_grpcio_peer_server.py", import.meta.url));
    await talkToPeer(
      t,
      {
        cmd: "/usr/bin/python3",
        args: (socket) => [script, socket, "0.5"],
        shutdownStatus: [STATUS.CANCELLED, "CANCELLED"],
        stopMayHang: true,
      },
      "grpcio",
    );
  },
});
