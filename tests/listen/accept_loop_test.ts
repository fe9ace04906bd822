// The accept loop: no accept error ends it, it backs off as Go's server does,
// logs once per burst, and holds its connection cap.
import assert from "node:assert/strict";
import { AcceptLoop, type RefusalReason } from "../../src/listen/accept_loop.ts";
import { createLogger } from "../../src/log.ts";

/** A listener whose accepts are scripted: an error to throw or a connection to give. */
class ScriptedListener implements Deno.Listener {
  readonly addr: Deno.NetAddr = { transport: "tcp", hostname: "127.0.0.1", port: 1 };
  readonly rid = 0;
  closed = false;
  #script: (Error | Deno.Conn)[];
  #waiting: PromiseWithResolvers<Deno.Conn> | undefined;

  constructor(script: (Error | Deno.Conn)[]) {
    this.#script = script;
  }

  push(item: Error | Deno.Conn): void {
    this.#script.push(item);
    const waiting = this.#waiting;
    this.#waiting = undefined;
    waiting?.resolve(this.accept());
  }

  accept(): Promise<Deno.Conn> {
    if (this.closed) return Promise.reject(new Deno.errors.BadResource("listener closed"));
    const next = this.#script.shift();
    if (next === undefined) {
      this.#waiting = Promise.withResolvers();
      return this.#waiting.promise;
    }
    return next instanceof Error ? Promise.reject(next) : Promise.resolve(next);
  }

  close(): void {
    this.closed = true;
    this.#waiting?.reject(new Deno.errors.BadResource("listener closed"));
  }

  ref(): void {}
  unref(): void {}
  [Symbol.dispose](): void {
    this.close();
  }
  async *[Symbol.asyncIterator](): AsyncIterableIterator<Deno.Conn> {}
}

/** A connection that only records being closed. */
function fakeConn(): Deno.Conn & { closed: boolean } {
  const conn = { closed: false, close: () => conn.closed = true };
  return conn as unknown as Deno.Conn & { closed: boolean };
}

function emfile(): Error {
  return Object.assign(new Error("Too many open files (os error 24)"), { code: "EMFILE" });
}

function recorder() {
  const lines: { level: string; msg: string }[] = [];
  const refused: RefusalReason[] = [];
  const failed: string[] = [];
  const delays: number[] = [];
  return {
    lines,
    refused,
    failed,
    delays,
    log: createLogger({
      level: "debug",
      write: (line) => {
        const { level, msg } = JSON.parse(line);
        lines.push({ level, msg });
      },
    }),
    observer: {
      refused: (reason: RefusalReason) => refused.push(reason),
      acceptFailed: (code: string) => failed.push(code),
    },
    sleep: (ms: number) => {
      delays.push(ms);
      return Promise.resolve();
    },
  };
}

Deno.test("AcceptLoop: EMFILE is counted and retried with Go's back-off, logged once per burst", async () => {
  const conn = fakeConn();
  const listener = new ScriptedListener([
    ...Array.from({ length: 10 }, emfile),
    conn,
    emfile(),
    emfile(),
  ]);
  const r = recorder();
  const served: Deno.Conn[] = [];
  const loop = new AcceptLoop(listener, {
    name: "metrics",
    maxConnections: 4,
    observer: r.observer,
    log: r.log,
    sleep: r.sleep,
  });
  const done = loop.run((c) => {
    served.push(c);
    return new Promise(() => {});
  });
  // Let the scripted accepts run out, then end the loop.
  for (let i = 0; i < 50 && r.failed.length < 12; i++) await Promise.resolve();
  await new Promise((resolve) => setTimeout(resolve, 0));
  loop.close();
  await done;
  assert.deepEqual(served, [conn]);
  assert.deepEqual(r.failed, Array(12).fill("EMFILE"));
  // 5 ms doubling to 1 s; a good accept starts over.
  assert.deepEqual(r.delays, [5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000, 5, 10]);
  const warnings = r.lines.filter((l) => l.level === "warn");
  assert.equal(warnings.length, 2, "one warning per burst of failures");
  assert.ok(r.lines.some((l) => l.msg === "accepting connections again"));
  assert.ok(listener.closed);
});

Deno.test("AcceptLoop: past the cap a connection is closed at once and counted; a slot freed is used again", async () => {
  const listener = new ScriptedListener([]);
  const r = recorder();
  const endings: PromiseWithResolvers<void>[] = [];
  const loop = new AcceptLoop(listener, {
    name: "http-api",
    maxConnections: 2,
    observer: r.observer,
    log: r.log,
    sleep: r.sleep,
  });
  const done = loop.run(() => {
    const ending = Promise.withResolvers<void>();
    endings.push(ending);
    return ending.promise;
  });
  const conns = Array.from({ length: 4 }, fakeConn);
  for (const c of conns) listener.push(c);
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(loop.open, 2);
  assert.deepEqual(conns.map((c) => c.closed), [false, false, true, true]);
  assert.deepEqual(r.refused, ["limit", "limit"]);
  endings[0]!.resolve();
  await new Promise((resolve) => setTimeout(resolve, 0));
  const late = fakeConn();
  listener.push(late);
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(late.closed, false);
  assert.equal(loop.open, 2);
  loop.drain();
  const drained = fakeConn();
  listener.push(drained);
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(drained.closed, true);
  assert.deepEqual(r.refused, ["limit", "limit", "shutting_down"]);
  loop.close();
  await done;
});

Deno.test("AcceptLoop: a real listener out of descriptors keeps accepting once they are back", async () => {
  // A child with a descriptor limit of 64 is flooded by 200 clients, then they go and one more comes.
  const script = `
    import { AcceptLoop } from ${
    JSON.stringify(new URL("../../src/listen/accept_loop.ts", import.meta.url).href)
  };
    import { silentLogger } from ${
    JSON.stringify(new URL("../../src/log.ts", import.meta.url).href)
  };
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const failures = [];
    const loop = new AcceptLoop(listener, {
      name: "t", maxConnections: 1000, log: silentLogger,
      observer: { refused() {}, acceptFailed: (code) => failures.push(code) },
      sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
    });
    const held = [];
    loop.run(async (conn) => {
      held.push(conn);
      const buf = new Uint8Array(16);
      const n = await conn.read(buf);
      if (n !== null && buf[0] === 0x3f) await conn.write(new TextEncoder().encode("failures " + failures.length + " " + [...new Set(failures)].join(",") + "\\n"));
      conn.close();
    });
    console.log(listener.addr.port);
  `;
  const child = new Deno.Command("/bin/bash", {
    args: ["-c", 'ulimit -n 64 && exec "$@"', "--", Deno.execPath(), "eval", script],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let first = "";
  while (!first.includes("\n")) first += (await reader.read()).value ?? "";
  const port = Number(first.trim());
  const conns: Deno.Conn[] = [];
  for (let i = 0; i < 200; i++) conns.push(await Deno.connect({ hostname: "127.0.0.1", port }));
  // Give the child time to run into its limit and back off (no assertion on time).
  await new Promise((resolve) => setTimeout(resolve, 300));
  for (const c of conns) c.close();
  const probe = await Deno.connect({ hostname: "127.0.0.1", port });
  await probe.write(new TextEncoder().encode("?"));
  const answer = new Uint8Array(100);
  const n = await probe.read(answer);
  probe.close();
  child.kill("SIGKILL");
  await child.status;
  await reader.cancel();
  await child.stderr.cancel();
  const text = new TextDecoder().decode(answer.subarray(0, n ?? 0));
  assert.match(text, /^failures [1-9]\d* EMFILE\n$/, `the child answered: ${JSON.stringify(text)}`);
});
