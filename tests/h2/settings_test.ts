import assert from "node:assert/strict";
import { ConnectionError, H2_ERROR } from "../../src/h2/errors.ts";
import { FRAME_HEADER_BYTES, MAX_INT31, settingsFrame } from "../../src/h2/frames.ts";
import {
  applySettings,
  INITIAL_SETTINGS,
  MAX_ALLOWED_FRAME_SIZE,
  SETTING,
  type Settings,
} from "../../src/h2/settings.ts";

function payload(entries: readonly (readonly [number, number])[]): Uint8Array {
  return settingsFrame(entries).subarray(FRAME_HEADER_BYTES);
}

function fresh(): Settings {
  return { ...INITIAL_SETTINGS };
}

Deno.test("INITIAL_SETTINGS holds the RFC 9113 initial values and is frozen", () => {
  assert.deepEqual(INITIAL_SETTINGS, {
    headerTableSize: 4096,
    enablePush: true,
    maxConcurrentStreams: Infinity,
    initialWindowSize: 65_535,
    maxFrameSize: 16_384,
    maxHeaderListSize: Infinity,
  });
  assert.ok(Object.isFrozen(INITIAL_SETTINGS));
  assert.equal(MAX_ALLOWED_FRAME_SIZE, 2 ** 24 - 1);
});

Deno.test("SETTING holds the RFC 9113 identifiers", () => {
  assert.deepEqual(SETTING, {
    HEADER_TABLE_SIZE: 1,
    ENABLE_PUSH: 2,
    MAX_CONCURRENT_STREAMS: 3,
    INITIAL_WINDOW_SIZE: 4,
    MAX_FRAME_SIZE: 5,
    MAX_HEADER_LIST_SIZE: 6,
  });
});

Deno.test("applySettings() takes each known setting in range", async (t) => {
  const cases: { name: string; id: number; value: number; expect: Partial<Settings> }[] = [
    {
      name: "HEADER_TABLE_SIZE 0",
      id: SETTING.HEADER_TABLE_SIZE,
      value: 0,
      expect: { headerTableSize: 0 },
    },
    {
      name: "HEADER_TABLE_SIZE 2^32 - 1",
      id: SETTING.HEADER_TABLE_SIZE,
      value: 2 ** 32 - 1,
      expect: { headerTableSize: 2 ** 32 - 1 },
    },
    { name: "ENABLE_PUSH 0", id: SETTING.ENABLE_PUSH, value: 0, expect: { enablePush: false } },
    { name: "ENABLE_PUSH 1", id: SETTING.ENABLE_PUSH, value: 1, expect: { enablePush: true } },
    {
      name: "MAX_CONCURRENT_STREAMS 0",
      id: SETTING.MAX_CONCURRENT_STREAMS,
      value: 0,
      expect: { maxConcurrentStreams: 0 },
    },
    {
      name: "INITIAL_WINDOW_SIZE 0",
      id: SETTING.INITIAL_WINDOW_SIZE,
      value: 0,
      expect: { initialWindowSize: 0 },
    },
    {
      name: "INITIAL_WINDOW_SIZE 2^31 - 1",
      id: SETTING.INITIAL_WINDOW_SIZE,
      value: MAX_INT31,
      expect: { initialWindowSize: MAX_INT31 },
    },
    {
      name: "MAX_FRAME_SIZE 16384",
      id: SETTING.MAX_FRAME_SIZE,
      value: 16_384,
      expect: { maxFrameSize: 16_384 },
    },
    {
      name: "MAX_FRAME_SIZE 2^24 - 1",
      id: SETTING.MAX_FRAME_SIZE,
      value: 2 ** 24 - 1,
      expect: { maxFrameSize: 2 ** 24 - 1 },
    },
    {
      name: "MAX_HEADER_LIST_SIZE 100",
      id: SETTING.MAX_HEADER_LIST_SIZE,
      value: 100,
      expect: { maxHeaderListSize: 100 },
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const settings = fresh();
      applySettings(settings, payload([[c.id, c.value]]));
      assert.deepEqual(settings, { ...INITIAL_SETTINGS, ...c.expect });
    });
  }
});

Deno.test("applySettings() refuses values out of range with the RFC's codes", async (t) => {
  const cases = [
    { name: "ENABLE_PUSH 2", id: SETTING.ENABLE_PUSH, value: 2, code: H2_ERROR.PROTOCOL_ERROR },
    {
      name: "INITIAL_WINDOW_SIZE 2^31",
      id: SETTING.INITIAL_WINDOW_SIZE,
      value: 2 ** 31,
      code: H2_ERROR.FLOW_CONTROL_ERROR,
    },
    {
      name: "MAX_FRAME_SIZE 16383",
      id: SETTING.MAX_FRAME_SIZE,
      value: 16_383,
      code: H2_ERROR.PROTOCOL_ERROR,
    },
    {
      name: "MAX_FRAME_SIZE 2^24",
      id: SETTING.MAX_FRAME_SIZE,
      value: 2 ** 24,
      code: H2_ERROR.PROTOCOL_ERROR,
    },
    {
      name: "MAX_FRAME_SIZE 0",
      id: SETTING.MAX_FRAME_SIZE,
      value: 0,
      code: H2_ERROR.PROTOCOL_ERROR,
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      assert.throws(
        () => applySettings(fresh(), payload([[c.id, c.value]])),
        (err: unknown) => err instanceof ConnectionError && err.code === c.code,
      );
    });
  }
});

Deno.test("applySettings() ignores unknown identifiers", () => {
  const settings = fresh();
  assert.equal(applySettings(settings, payload([[0, 5], [0x7, 1], [0xffff, 0xffffffff]])), 0);
  assert.deepEqual(settings, INITIAL_SETTINGS);
});

Deno.test("applySettings() with an empty payload changes nothing", () => {
  const settings = fresh();
  assert.equal(applySettings(settings, new Uint8Array(0)), 0);
  assert.deepEqual(settings, INITIAL_SETTINGS);
});

Deno.test("applySettings() returns the change of the initial window size", async (t) => {
  const cases = [
    {
      name: "larger",
      entries: [[SETTING.INITIAL_WINDOW_SIZE, 1 << 20]] as const,
      delta: (1 << 20) - 65_535,
    },
    { name: "smaller", entries: [[SETTING.INITIAL_WINDOW_SIZE, 0]] as const, delta: -65_535 },
    { name: "same", entries: [[SETTING.INITIAL_WINDOW_SIZE, 65_535]] as const, delta: 0 },
    {
      name: "other settings only",
      entries: [[SETTING.MAX_CONCURRENT_STREAMS, 1]] as const,
      delta: 0,
    },
    {
      name: "set twice in one frame: the net change",
      entries: [[SETTING.INITIAL_WINDOW_SIZE, 0], [SETTING.INITIAL_WINDOW_SIZE, 100_000]] as const,
      delta: 100_000 - 65_535,
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      assert.equal(applySettings(fresh(), payload(c.entries)), c.delta);
    });
  }
});

Deno.test("applySettings() applies several settings in order, the last value winning", () => {
  const settings = fresh();
  applySettings(
    settings,
    payload([
      [SETTING.MAX_CONCURRENT_STREAMS, 10],
      [SETTING.HEADER_TABLE_SIZE, 0],
      [SETTING.MAX_CONCURRENT_STREAMS, 20],
      [SETTING.MAX_FRAME_SIZE, 32_768],
    ]),
  );
  assert.equal(settings.maxConcurrentStreams, 20);
  assert.equal(settings.headerTableSize, 0);
  assert.equal(settings.maxFrameSize, 32_768);
});
