// Text bodies (`textResponse`) are encoded after their heads into buffers the
// server keeps: a large body made per request costs no buffer or string of
// its size, and goes out in one write.
import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { serveHttp1, textResponse } from "../../src/http1/mod.ts";
import { TextBodyEncoder, textBodyOf } from "../../src/http1/text_body.ts";
import { silentLogger } from "../../src/log.ts";

const ENC = new TextEncoder();
const DEC = new TextDecoder();

function headFor(length: number): Uint8Array {
  return ENC.encode(`HTTP/1.1 200 OK\r\ncontent-length: ${length}\r\n\r\n`);
}

Deno.test("text body: head and parts in one buffer, reused once released", () => {
  const encoder = new TextBodyEncoder();
  const parts = ['{"items":[', '"a"', ",", '"b"', "]}"];
  const first = encoder.encode(parts, headFor);
  assert.equal(DEC.decode(first.bytes), `${DEC.decode(headFor(19))}{"items":["a","b"]}`);
  first.release();
  const second = encoder.encode(["x".repeat(5000)], headFor);
  const third = encoder.encode(["y".repeat(3000)], headFor);
  // The second takes the first's buffer grown; the third, while the second is lent, another.
  assert.notEqual(second.bytes.buffer, third.bytes.buffer);
  second.release();
  const kept = encoder.keptBytes;
  const fourth = encoder.encode(["z".repeat(4000)], headFor);
  assert.equal(fourth.bytes.buffer, second.bytes.buffer);
  assert.equal(DEC.decode(fourth.bytes), `${DEC.decode(headFor(4000))}${"z".repeat(4000)}`);
  assert.equal(encoder.keptBytes, kept, "no buffer was added for a body that fits a free one");
});

Deno.test("text body: non-ASCII, a head past its room, and a body past the pool are encoded whole", () => {
  const encoder = new TextBodyEncoder();
  const parts = ["é".repeat(3000), "😀", "-"];
  const text = parts.join("");
  const unicode = encoder.encode(parts, headFor);
  assert.equal(DEC.decode(unicode.bytes), `${DEC.decode(headFor(ENC.encode(text).length))}${text}`);
  unicode.release();

  const longHead = (length: number) =>
    ENC.encode(`x-pad: ${"p".repeat(2000)}\r\n${length}\r\n\r\n`);
  const padded = encoder.encode(["body"], longHead);
  assert.equal(DEC.decode(padded.bytes), `${DEC.decode(longHead(4))}body`);
  padded.release();

  const huge = "h".repeat(9 * 1024 * 1024);
  const alone = encoder.encode([huge], headFor);
  assert.equal(alone.bytes.length, headFor(huge.length).length + huge.length);
  assert.ok(encoder.keptBytes <= 8 * 1024 * 1024, "the pool stays bounded");
  alone.release();
});

Deno.test("text body: the response reads as its joined parts to anyone but the server", async () => {
  const response = textResponse(["a", "é", "c"], { headers: { "content-type": "text/plain" } });
  assert.deepEqual(textBodyOf(response), ["a", "é", "c"]);
  assert.equal(await response.text(), "aéc");
  assert.equal(await textResponse("plain").text(), "plain");
  assert.equal(textBodyOf(new Response("other")), undefined);
});

/** Writes of each accepted connection, seen by wrapping the listener the server binds. */
function recordingListen(writes: Uint8Array[]): () => void {
  const listen = Deno.listen;
  const wrapped = (options: Deno.TcpListenOptions) => {
    const listener = listen(options);
    return new Proxy(listener, {
      get(target, key) {
        if (key === "accept") {
          return async () => {
            const conn = await target.accept();
            return new Proxy(conn, {
              get(c, k) {
                if (k === "write") {
                  return (bytes: Uint8Array) => {
                    writes.push(bytes);
                    return c.write(bytes);
                  };
                }
                const value = Reflect.get(c, k, c);
                return typeof value === "function" ? value.bind(c) : value;
              },
            });
          };
        }
        const value = Reflect.get(target, key, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  };
  (Deno as { listen: unknown }).listen = wrapped;
  return () => (Deno as { listen: unknown }).listen = listen;
}

Deno.test("http1: a large text response goes in one write from a buffer reused by the next", async () => {
  const writes: Uint8Array[] = [];
  const restore = recordingListen(writes);
  const item = `{"name":"${"n".repeat(4000)}"}`;
  const parts = ["[", ...Array.from({ length: 100 }, (_, i) => (i > 0 ? "," : "") + item), "]"];
  const body = parts.join("");
  let server;
  try {
    server = serveHttp1({
      hostname: "127.0.0.1",
      port: 0,
      name: "test",
      maxConnections: 4,
      timeouts: { tlsHandshakeMs: 10_000, readHeaderMs: 10_000, idleMs: 90_000, writeMs: 60_000 },
      observer: { refused: () => {}, acceptFailed: () => {}, timedOut: () => {} },
      log: silentLogger,
      clock: new FakeClock(),
      onError: () => new Response("handler failed\n", { status: 500 }),
    }, () => textResponse(parts, { headers: { "content-type": "application/json" } }));
  } finally {
    restore();
  }
  try {
    const url = `http://127.0.0.1:${server.addr.port}/`;
    for (let i = 0; i < 2; i++) {
      const response = await fetch(url);
      assert.equal(response.headers.get("content-length"), String(body.length));
      assert.equal(await response.text(), body);
    }
    assert.equal(writes.length, 2, "one write a response");
    for (const w of writes) assert.ok(DEC.decode(w).endsWith(body));
    assert.equal(
      writes[0]!.buffer,
      writes[1]!.buffer,
      "the second response reused the first's buffer",
    );
  } finally {
    await server.close();
  }
});
