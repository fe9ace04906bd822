// deno-lint-ignore-file no-console
/**
 * A grpc-js client of the Pods API for the interop tests, the same file
 * under Node and under Deno (grpc-js is imported from the specifier given,
 * so neither runtime needs the other's resolution). Requests and responses
 * are bytes (identity serializers, no generated code).
 *
 * Each cycle opens a fresh connection (a local subchannel pool), calls
 * ListPods and GetPod on /v1alpha1.Pods and /Pods, GetPod of an unknown pod,
 * reads a few events of a watch then cancels it, runs a watch with a short
 * deadline, and closes in one of these orders:
 * - cancel:   cancel an open watch, then close the client (RST_STREAM, GOAWAY, EOF);
 * - open:     close the client under an open watch, cancel it only if still open later;
 * - graceful: close with nothing open.
 *
 * Usage: `node|deno run _grpcjs_client.mjs --grpc SPECIFIER --socket PATH
 *   [--cycles N] [--parallel P] [--close mix|cancel|open|graceful] [--progress]`
 * Prints one JSON summary line (and "progress N" lines with --progress).
 */

const argv = globalThis.Deno ? globalThis.Deno.args : globalThis.process.argv.slice(2);

function option(name, fallback) {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : fallback;
}

const specifier = option("grpc");
const socket = option("socket");
const cycles = Number(option("cycles", "100"));
const parallel = Number(option("parallel", "1"));
const closeOrder = option("close", "mix");
const progress = argv.includes("--progress");
if (!specifier || !socket) {
  console.error("usage: _grpcjs_client.mjs --grpc SPECIFIER --socket PATH [--cycles N]");
  throw new Error("missing arguments");
}

const grpc = await import(specifier);
const { Buffer } = await import("node:buffer");
const { status } = grpc;
const STATUS_NAMES = Object.fromEntries(Object.entries(status).map(([k, v]) => [v, k]));
const CLOSES = ["cancel", "open", "graceful"];

const summary = {
  cycles: 0,
  "calls_ok": 0,
  "watch_events": 0,
  statuses: {},
  closes: {},
  unexpected: [],
  seconds: 0,
};

function record(code) {
  const name = STATUS_NAMES[code] ?? String(code);
  summary.statuses[name] = (summary.statuses[name] ?? 0) + 1;
  if (code === status.OK) summary.calls_ok++;
}

function unexpected(text) {
  if (summary.unexpected.length < 20) summary.unexpected.push(text);
}

const identity = (b) => b;
const toBuffer = (b) => Buffer.from(b);

function varint(b, i) {
  let v = 0;
  let s = 0;
  for (; i < b.length; s += 7) {
    const c = b[i++];
    v += (c & 0x7f) * 2 ** s;
    if (c < 0x80) return [v, i];
  }
  return [-1, i];
}

function field(b, num) {
  if (!b) return undefined;
  for (let i = 0; i < b.length;) {
    let tag;
    [tag, i] = varint(b, i);
    if (tag < 0) return undefined;
    if ((tag & 7) === 0) {
      [, i] = varint(b, i);
    } else if ((tag & 7) === 2) {
      let n;
      [n, i] = varint(b, i);
      if (tag >>> 3 === num) return b.subarray(i, i + n);
      i += n;
    } else return undefined;
  }
  return undefined;
}

function getRequest(uid) {
  const raw = Buffer.from(uid);
  return Buffer.concat([Buffer.from([0x0a, raw.length]), raw]);
}

function unary(client, path, body, want) {
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      path,
      toBuffer,
      identity,
      body,
      new grpc.Metadata(),
      { deadline: Date.now() + 10_000 },
      (err, value) => {
        const code = err ? err.code : status.OK;
        record(code);
        if (!want.includes(code)) {
          unexpected(`${path}: ${STATUS_NAMES[code]} ${err?.details ?? ""}`);
        }
        resolve(value);
      },
    );
  });
}

/** Opens a watch; resolves `events` once n messages arrived; `ended` with the final code. */
function watch(client, path, options = {}) {
  const call = client.makeServerStreamRequest(
    path,
    toBuffer,
    identity,
    Buffer.alloc(0),
    new grpc.Metadata(),
    options,
  );
  let seen = 0;
  const waiters = [];
  const ended = new Promise((resolve) => {
    call.on("error", (err) => resolve(err.code));
    call.on("status", (s) => {
      if (s.code === status.OK) resolve(s.code);
    });
  });
  call.on("data", () => {
    seen++;
    summary.watch_events++;
    for (const w of waiters.splice(0)) w();
  });
  return {
    call,
    ended,
    async waitFor(n) {
      while (seen < n) {
        const more = new Promise((r) => waiters.push(r));
        const end = await Promise.race([more.then(() => false), ended.then(() => true)]);
        if (end && seen < n) return false;
      }
      return true;
    },
  };
}

function withTimeout(promise, ms) {
  let timer;
  return Promise.race([
    promise,
    new Promise((r) => timer = setTimeout(r, ms, "timeout")),
  ]).finally(() => clearTimeout(timer));
}

async function cycle(order) {
  const client = new grpc.Client(`unix:${socket}`, grpc.credentials.createInsecure(), {
    "grpc.use_local_subchannel_pool": 1,
    "grpc.max_receive_message_length": -1,
  });
  for (const prefix of ["/v1alpha1.Pods", "/Pods"]) {
    const list = await unary(client, `${prefix}/ListPods`, Buffer.alloc(0), [status.OK]);
    const uid = field(field(field(list, 1), 1), 5);
    if (uid) {
      // The simulated node churns: the pod may be gone by now.
      await unary(client, `${prefix}/GetPod`, getRequest(uid.toString()), [
        status.OK,
        status.NOT_FOUND,
      ]);
    } else unexpected(`${prefix}/ListPods: no pod`);
  }
  await unary(client, "/v1alpha1.Pods/GetPod", getRequest("00000000-0000-4000-8000-00000000dead"), [
    status.NOT_FOUND,
  ]);

  const w = watch(client, "/v1alpha1.Pods/WatchPods");
  if (!(await w.waitFor(3))) unexpected(`watch ended early: ${STATUS_NAMES[await w.ended]}`);
  w.call.cancel();
  const cancelled = await w.ended;
  record(cancelled);
  if (cancelled !== status.CANCELLED) unexpected(`cancelled watch: ${STATUS_NAMES[cancelled]}`);

  const d = watch(client, "/Pods/WatchPods", { deadline: Date.now() + 30 });
  const expired = await d.ended;
  record(expired);
  if (expired !== status.DEADLINE_EXCEEDED) unexpected(`deadline watch: ${STATUS_NAMES[expired]}`);

  if (order === "cancel") {
    const o = watch(client, "/v1alpha1.Pods/WatchPods");
    await o.waitFor(1);
    o.call.cancel();
    client.close();
    await o.ended;
  } else if (order === "open") {
    const o = watch(client, "/v1alpha1.Pods/WatchPods");
    await o.waitFor(1);
    client.close();
    if ((await withTimeout(o.ended, 200)) === "timeout") {
      o.call.cancel();
      await o.ended;
    }
  } else {
    client.close();
  }
}

const start = performance.now();
let next = 0;
async function worker() {
  while (next < cycles) {
    const i = next++;
    const order = closeOrder === "mix" ? CLOSES[i % CLOSES.length] : closeOrder;
    try {
      await cycle(order);
    } catch (err) {
      unexpected(`cycle ${i}: ${err?.stack ?? err}`);
    }
    summary.cycles++;
    summary.closes[order] = (summary.closes[order] ?? 0) + 1;
    if (progress) console.log(`progress ${summary.cycles}`);
  }
}
await Promise.all(Array.from({ length: parallel }, worker));
summary.seconds = (performance.now() - start) / 1000;
console.log(JSON.stringify(summary));
if (globalThis.Deno) globalThis.Deno.exit(0);
else globalThis.process.exit(0);
