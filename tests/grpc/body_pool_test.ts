// The buffers large response messages are read into and given back
// (src/grpc/_body_pool.ts): one is never lent twice at once, only its own
// buffers come back, and what it keeps is bounded.
import assert from "node:assert/strict";
import {
  BodyPool,
  POOLED_BODY_MAX_BYTES,
  POOLED_BODY_MIN_BYTES,
} from "../../src/grpc/_body_pool.ts";

Deno.test("BodyPool.take() never lends a buffer that was not given back", () => {
  const pool = new BodyPool();
  const length = POOLED_BODY_MIN_BYTES + 100;
  const first = pool.take(length);
  const second = pool.take(length);
  assert.equal(first.byteLength, length);
  assert.notEqual(first.buffer, second.buffer);
  pool.give(first);
  const third = pool.take(length);
  assert.equal(third.buffer, first.buffer, "a buffer given back is lent again");
  assert.notEqual(third.buffer, second.buffer);
  pool.give(second);
  pool.give(third);
});

Deno.test("BodyPool.give() takes a buffer back once, and only one of the pool's", () => {
  const pool = new BodyPool();
  const length = POOLED_BODY_MIN_BYTES * 2;
  const body = pool.take(length);
  pool.give(body);
  pool.give(body);
  // Given back twice, kept once: two takes get two buffers.
  const a = pool.take(length);
  const b = pool.take(length);
  assert.notEqual(a.buffer, b.buffer);
  // Not the pool's: a buffer of its own, and small or huge messages.
  pool.give(new Uint8Array(length));
  const small = pool.take(POOLED_BODY_MIN_BYTES - 1);
  pool.give(small);
  assert.notEqual(pool.take(POOLED_BODY_MIN_BYTES - 1).buffer, small.buffer);
  const huge = pool.take(POOLED_BODY_MAX_BYTES + 1);
  pool.give(huge);
  assert.notEqual(pool.take(POOLED_BODY_MAX_BYTES + 1).buffer, huge.buffer);
  const c = pool.take(length);
  assert.ok(c.buffer !== a.buffer && c.buffer !== b.buffer);
  for (const body of [a, b, c]) pool.give(body);
});

Deno.test("BodyPool.take() lends the smallest kept buffer that holds the message, and keeps a few", () => {
  const pool = new BodyPool();
  const sizes = [1, 2, 4, 8, 16].map((k) => POOLED_BODY_MIN_BYTES * k);
  const lent = sizes.map((size) => pool.take(size));
  for (const body of lent) pool.give(body);
  // Five given back, four kept: the smallest went.
  const again = sizes.map((size) => pool.take(size - 1));
  const reused = again.filter((body) => lent.some((l) => l.buffer === body.buffer));
  assert.equal(reused.length, 4);
  assert.equal(again[0]!.buffer === lent[0]!.buffer, false, "the smallest was not kept");
  for (let i = 1; i < sizes.length; i++) assert.equal(again[i]!.buffer, lent[i]!.buffer);
  for (const body of again) pool.give(body);
});
