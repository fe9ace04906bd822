// The HTTP/1.1 server of the TCP listeners, over real sockets: requests and
// keep-alive as clients send them, strict parsing, the connection cap, and
// every deadline on a fake clock (advanced only once the connection waits).
import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import {
  type Deadline,
  type Http1Handler,
  type Http1Timeouts,
  serveHttp1,
  streamingResponse,
} from "../../src/http1/mod.ts";
import type { RefusalReason } from "../../src/listen/accept_loop.ts";
import { silentLogger } from "../../src/log.ts";
import { ensureServingCert } from "../../src/tls/mod.ts";
import { removeTree } from "../_support/remove_tree.ts";

const TIMEOUTS: Http1Timeouts = {
  tlsHandshakeMs: 10_000,
  readHeaderMs: 10_000,
  idleMs: 90_000,
  writeMs: 60_000,
};
/** Deadlines are swept every tenth of the shortest: one fires within two ticks of falling due. */
const TICK = 1000;
const ENC = new TextEncoder();
const DEC = new TextDecoder();

function start(
  handler: Http1Handler,
  extra: { maxConnections?: number; tls?: { cert: string; key: string } } = {},
) {
  const clock = new FakeClock();
  const timedOut: Deadline[] = [];
  const refused: RefusalReason[] = [];
  const server = serveHttp1({
    hostname: "127.0.0.1",
    port: 0,
    name: "test",
    maxConnections: extra.maxConnections ?? 16,
    timeouts: TIMEOUTS,
    ...(extra.tls === undefined ? {} : { tls: extra.tls }),
    observer: {
      refused: (reason) => refused.push(reason),
      acceptFailed: () => {},
      timedOut: (deadline) => timedOut.push(deadline),
    },
    log: silentLogger,
    clock,
    onError: () => new Response("handler failed\n", { status: 500 }),
  }, handler);
  return { server, clock, timedOut, refused, port: server.addr.port };
}

async function connect(port: number): Promise<Deno.TcpConn> {
  return await Deno.connect({ hostname: "127.0.0.1", port });
}

/** Reads until the peer closes; the text read. */
async function readToEnd(conn: Deno.Conn): Promise<string> {
  const buf = new Uint8Array(65536);
  let text = "";
  for (;;) {
    const n = await conn.read(buf).catch(() => null);
    if (n === null) return text;
    text += DEC.decode(buf.subarray(0, n));
  }
}

/** Reads until `text` holds `count` whole responses with content-length bodies. */
async function readResponses(conn: Deno.Conn, count: number): Promise<string[]> {
  const buf = new Uint8Array(65536);
  let text = "";
  const out: string[] = [];
  for (;;) {
    for (;;) {
      const end = text.indexOf("\r\n\r\n");
      if (end < 0) break;
      const length = Number(/content-length: (\d+)/i.exec(text.slice(0, end))?.[1] ?? "0");
      if (text.length < end + 4 + length) break;
      out.push(text.slice(0, end + 4 + length));
      text = text.slice(end + 4 + length);
    }
    if (out.length >= count) return out;
    const n = await conn.read(buf);
    if (n === null) return out;
    text += DEC.decode(buf.subarray(0, n));
  }
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`never: ${what}`);
}

const hello: Http1Handler = (request) =>
  new Response(`hello ${request.method} ${new URL(request.url).pathname}\n`, {
    headers: { "content-type": "text/plain" },
  });

Deno.test("http1: fetch gets answers, kept alive across requests", async () => {
  const s = start(hello);
  try {
    for (const path of ["/a", "/b?x=1", "/c"]) {
      const res = await fetch(`http://127.0.0.1:${s.port}${path}`);
      assert.equal(res.status, 200);
      assert.equal(await res.text(), `hello GET ${path.split("?")[0]}\n`);
    }
    const head = await fetch(`http://127.0.0.1:${s.port}/h`, { method: "HEAD" });
    assert.equal(head.headers.get("content-length"), "14");
    assert.equal(await head.text(), "");
  } finally {
    await s.server.close();
  }
});

Deno.test("http1: pipelined requests are answered in order on one connection", async () => {
  const s = start(hello);
  const conn = await connect(s.port);
  try {
    await conn.write(ENC.encode(
      "GET /one HTTP/1.1\r\nHost: x\r\n\r\nGET /two HTTP/1.1\r\nHost: x\r\n\r\n",
    ));
    const [one, two] = await readResponses(conn, 2);
    assert.match(one!, /^HTTP\/1\.1 200 OK\r\n[\s\S]*hello GET \/one\n$/);
    assert.match(two!, /^HTTP\/1\.1 200 OK\r\n[\s\S]*hello GET \/two\n$/);
  } finally {
    conn.close();
    await s.server.close();
  }
});

Deno.test("http1: what cannot be read strictly is refused with a status and the connection closed", async () => {
  const s = start(hello);
  const cases: [string, RegExp][] = [
    ["GET /x HTTP/1.1\r\n\r\n", /^HTTP\/1\.1 400 [\s\S]*missing Host header/],
    ["GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", /^HTTP\/1\.1 400 [\s\S]*too many Host/],
    ["GET  /x HTTP/1.1\r\nHost: a\r\n\r\n", /^HTTP\/1\.1 400 [\s\S]*malformed request line/],
    ["GET /x HTTP/2.0\r\nHost: a\r\n\r\n", /^HTTP\/1\.1 505 /],
    ["GET /x HTTP/1.1\r\nHost : a\r\n\r\n", /^HTTP\/1\.1 400 [\s\S]*field name/],
    ["GET /x HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", /^HTTP\/1\.1 400 /],
    [
      "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
      /^HTTP\/1\.1 501 /,
    ],
    [
      "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
      /^HTTP\/1\.1 400 [\s\S]*conflicting Content-Length/,
    ],
    ["POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 999999\r\n\r\n", /^HTTP\/1\.1 413 /],
    [`GET /${"a".repeat(70_000)} HTTP/1.1\r\nHost: a\r\n\r\n`, /^HTTP\/1\.1 431 /],
    ["GET * HTTP/1.1\r\nHost: a\r\n\r\n", /^HTTP\/1\.1 400 /],
  ];
  try {
    for (const [request, expected] of cases) {
      const conn = await connect(s.port);
      await conn.write(ENC.encode(request)).catch(() => 0);
      const text = await readToEnd(conn);
      conn.close();
      assert.match(text, expected, JSON.stringify(request.slice(0, 60)));
      assert.match(text, /connection: close\r\n/);
    }
  } finally {
    await s.server.close();
  }
});

Deno.test("http1: HTTP/1.0 closes after its response unless kept alive; a handler that throws gets onError's answer", async () => {
  const s = start((request) => {
    if (new URL(request.url).pathname === "/throw") throw new Error("boom");
    return hello(request, {
      remoteAddr: { transport: "tcp", hostname: "", port: 0 },
      completed: Promise.resolve(),
    });
  });
  try {
    const conn = await connect(s.port);
    await conn.write(ENC.encode("GET /old HTTP/1.0\r\n\r\n"));
    assert.match(
      await readToEnd(conn),
      /^HTTP\/1\.1 200 OK\r\n[\s\S]*connection: close[\s\S]*hello GET \/old\n$/,
    );
    conn.close();
    const thrown = await fetch(`http://127.0.0.1:${s.port}/throw`);
    assert.equal(thrown.status, 500);
    assert.equal(await thrown.text(), "handler failed\n");
  } finally {
    await s.server.close();
  }
});

Deno.test("http1: past the cap a connection is closed at once and counted", async () => {
  const s = start(hello, { maxConnections: 2 });
  const held = [await connect(s.port), await connect(s.port)];
  try {
    await until(() => s.server.openConnections === 2, "two connections open");
    const third = await connect(s.port);
    assert.equal(await readToEnd(third), "");
    third.close();
    assert.deepEqual(s.refused, ["limit"]);
    held.pop()!.close();
    await until(() => s.server.openConnections === 1, "a slot freed");
    const res = await fetch(`http://127.0.0.1:${s.port}/again`);
    assert.equal(await res.text(), "hello GET /again\n");
  } finally {
    for (const c of held) c.close();
    await s.server.close();
  }
});

Deno.test("http1: a slow client is cut at the header deadline, an idle one at the idle deadline", async () => {
  const s = start(hello);
  try {
    // Slowloris: a header byte now and then, never the blank line.
    const slow = await connect(s.port);
    await slow.write(ENC.encode("GET /x HTTP/1.1\r\nHo"));
    await until(() => s.server.openConnections === 1, "the slow client accepted");
    s.clock.advance(TIMEOUTS.readHeaderMs - TICK);
    await slow.write(ENC.encode("s"));
    assert.deepEqual(s.timedOut, [], "not cut before the deadline, bytes or not");
    s.clock.advance(2 * TICK);
    assert.equal(await readToEnd(slow), "");
    slow.close();
    assert.deepEqual(s.timedOut, ["read_header"]);

    // Kept alive after one request, then silent.
    const idle = await connect(s.port);
    await idle.write(ENC.encode("GET /x HTTP/1.1\r\nHost: a\r\n\r\n"));
    await readResponses(idle, 1);
    s.clock.advance(TIMEOUTS.readHeaderMs);
    assert.equal(s.timedOut.length, 1, "the header deadline is over once the request was read");
    s.clock.advance(TIMEOUTS.idleMs - TIMEOUTS.readHeaderMs + 2 * TICK);
    assert.equal(await readToEnd(idle), "");
    idle.close();
    assert.deepEqual(s.timedOut, ["read_header", "idle"]);
  } finally {
    await s.server.close();
  }
});

Deno.test("http1: a client that never starts TLS is cut at the handshake deadline; one that does is served", async () => {
  const dir = await Deno.makeTempDir();
  const cert = await ensureServingCert({ dir, hosts: ["127.0.0.1"], now: Date.now() });
  const s = start(hello, { tls: { cert: cert.cert, key: cert.key } });
  try {
    const silent = await connect(s.port);
    await until(() => s.server.openConnections === 1, "the silent client accepted");
    s.clock.advance(TIMEOUTS.tlsHandshakeMs + 2 * TICK);
    assert.equal(await readToEnd(silent), "");
    silent.close();
    assert.deepEqual(s.timedOut, ["tls_handshake"]);
    const client = Deno.createHttpClient({ caCerts: [await Deno.readTextFile(cert.caFile)] });
    const res = await fetch(`https://127.0.0.1:${s.port}/secure`, { client });
    assert.equal(await res.text(), "hello GET /secure\n");
    client.close();
  } finally {
    await s.server.close();
    removeTree(dir);
  }
});

Deno.test("http1: a streamed response goes chunked, ends when the client leaves, and a stalled write is cut", async () => {
  const cancelled = Promise.withResolvers<void>();
  const floodCancelled = Promise.withResolvers<void>();
  let completed: Promise<void> | undefined;
  const big = new Uint8Array(256 * 1024).fill(0x61);
  let floods = 0;
  const s = start((request, info) => {
    completed = info.completed;
    const flood = new URL(request.url).pathname === "/flood";
    let n = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (flood) return controller.enqueue((floods++, big));
        if (n++ < 2) return controller.enqueue(ENC.encode(`line ${n}\n`));
        // Then nothing more until the client goes.
        return new Promise(() => {});
      },
      cancel: () => flood ? floodCancelled.resolve() : cancelled.resolve(),
    }, { highWaterMark: 0 });
    return streamingResponse(new Response(body, { headers: { "content-type": "text/plain" } }));
  });
  try {
    const conn = await connect(s.port);
    await conn.write(ENC.encode("GET /watch HTTP/1.1\r\nHost: a\r\n\r\n"));
    const buf = new Uint8Array(4096);
    let text = "";
    while (!text.includes("line 2\n")) {
      const n = await conn.read(buf);
      assert.notEqual(n, null);
      text += DEC.decode(buf.subarray(0, n!));
    }
    assert.match(text, /^HTTP\/1\.1 200 OK\r\n[\s\S]*transfer-encoding: chunked\r\n/);
    assert.match(text, /\r\n7\r\nline 1\n\r\n7\r\nline 2\n\r\n/);
    conn.close();
    await cancelled.promise;
    await completed;
    await until(() => s.server.openConnections === 0, "the watch's connection closed");

    // A client that asks for a stream and never reads: the write deadline frees its slot.
    const stalled = await connect(s.port);
    await stalled.write(ENC.encode("GET /flood HTTP/1.1\r\nHost: a\r\n\r\n"));
    // Time moves only once the body flows (before, the header deadline would cut the request).
    await until(() => floods > 0, "the stream started");
    await until(() => {
      s.clock.advance(TIMEOUTS.writeMs);
      return s.timedOut.includes("write");
    }, "the stalled write cut");
    // The stream ends at once; the socket, with its write in flight, goes when the client does.
    await floodCancelled.promise;
    assert.equal(s.server.openConnections, 1, "the slot is held while Deno holds the socket");
    stalled.close();
    await until(() => s.server.openConnections === 0, "the stalled connection closed");
  } finally {
    await s.server.close();
  }
});

Deno.test("http1: close() answers the request in progress, then closes every connection", async () => {
  const release = Promise.withResolvers<void>();
  const called = Promise.withResolvers<void>();
  const s = start(async () => {
    called.resolve();
    await release.promise;
    return new Response("late\n");
  });
  const idle = await connect(s.port);
  const busy = await connect(s.port);
  await busy.write(ENC.encode("GET /slow HTTP/1.1\r\nHost: a\r\n\r\n"));
  await until(() => s.server.openConnections === 2, "both accepted");
  await called.promise;
  const closing = s.server.close();
  assert.equal(await readToEnd(idle), "");
  release.resolve();
  const text = await readToEnd(busy);
  assert.match(text, /^HTTP\/1\.1 200 OK\r\n[\s\S]*connection: close\r\n[\s\S]*late\n$/);
  await closing;
  idle.close();
  busy.close();
  await assert.rejects(connect(s.port));
});
