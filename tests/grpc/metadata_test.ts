import assert from "node:assert/strict";
import {
  decodeGrpcMessage,
  encodeGrpcMessage,
  formatTimeout,
  metadataFields,
  parseTimeout,
  readMetadata,
} from "../../src/grpc/metadata.ts";
import type { HeaderField } from "../../src/h2/hpack.ts";

Deno.test("parseTimeout() reads every unit into milliseconds", async (t) => {
  const cases: [string, number][] = [
    ["1H", 3_600_000],
    ["2M", 120_000],
    ["3S", 3000],
    ["1500m", 1500],
    ["2000u", 2],
    ["1u", 0.001],
    ["5000000n", 5],
    ["1n", 0.000001],
    ["0m", 0],
    ["99999999S", 99_999_999_000],
    ["00000001S", 1000],
  ];
  for (const [value, ms] of cases) {
    await t.step(value, () => assert.equal(parseTimeout(value), ms));
  }
});

Deno.test("parseTimeout() refuses malformed values", async (t) => {
  const cases = [
    "",
    "1",
    "m",
    "123456789m",
    "1x",
    "1h",
    "1s",
    "-1m",
    "+1m",
    "1.5S",
    " 1m",
    "1m ",
    "1mm",
    "1 m",
    "0x10m",
    "\u0661m",
  ];
  for (const value of cases) {
    await t.step(JSON.stringify(value), () => assert.equal(parseTimeout(value), undefined));
  }
});

Deno.test("formatTimeout() picks a unit that fits in 8 digits, rounding up", async (t) => {
  const cases: [number, string][] = [
    [0, "0m"],
    [-5, "0m"],
    [0.2, "1m"],
    [1, "1m"],
    [1500, "1500m"],
    [1500.1, "1501m"],
    [99_999_999, "99999999m"],
    [100_000_000, "100000S"],
    [100_000_001, "100001S"],
    [99_999_999_000, "99999999S"],
    [99_999_999_001, "27778H"],
    [Number.MAX_SAFE_INTEGER, "99999999H"],
    [Infinity, "99999999H"],
  ];
  for (const [ms, value] of cases) {
    await t.step(`${ms} ms`, () => assert.equal(formatTimeout(ms), value));
  }
});

Deno.test("formatTimeout() and parseTimeout() round-trip without shortening the deadline", async (t) => {
  const cases = [0, 0.001, 1, 999.5, 60_000, 99_999_999, 100_000_000, 123_456_789_012, 1e14];
  for (const ms of cases) {
    await t.step(`${ms} ms`, () => {
      const value = formatTimeout(ms);
      assert.match(value, /^\d{1,8}[HMSmun]$/);
      const back = parseTimeout(value);
      assert.ok(back !== undefined && back >= ms, `${ms} -> ${value} -> ${back}`);
      // Never more than one unit of the chosen size longer.
      const unit = value.endsWith("H") ? 3_600_000 : value.endsWith("S") ? 1000 : 1;
      assert.ok(back - ms < unit, `${ms} -> ${back}`);
    });
  }
});

Deno.test("encodeGrpcMessage() percent-encodes all but printable ASCII other than %", async (t) => {
  const cases: [string, string][] = [
    ["", ""],
    ['pod "a" not found', 'pod "a" not found'],
    ["~ !#$&'()*+,/:;=?@[]^_`{|}", "~ !#$&'()*+,/:;=?@[]^_`{|}"],
    ["100%", "100%25"],
    ["%25", "%2525"],
    ["caf\u00e9", "caf%C3%A9"],
    ["\u{1F600}", "%F0%9F%98%80"],
    ["\u4e2d\u6587", "%E4%B8%AD%E6%96%87"],
    ["a\nb\tc\r", "a%0Ab%09c%0D"],
    ["\x00\x1f\x7f", "%00%1F%7F"],
  ];
  for (const [message, value] of cases) {
    await t.step(JSON.stringify(message), () => {
      assert.equal(encodeGrpcMessage(message), value);
      assert.equal(decodeGrpcMessage(value), message);
    });
  }
});

Deno.test("decodeGrpcMessage() accepts lower-case hex and keeps malformed escapes as they are", async (t) => {
  const cases: [string, string][] = [
    ["caf%c3%a9", "caf\u00e9"],
    ["100%", "100%"],
    ["50% off", "50% off"],
    ["%4", "%4"],
    ["%G1", "%G1"],
    ["%%41", "%A"],
    ["plain", "plain"],
  ];
  for (const [value, message] of cases) {
    await t.step(JSON.stringify(value), () => assert.equal(decodeGrpcMessage(value), message));
  }
});

Deno.test("decodeGrpcMessage() replaces an invalid UTF-8 sequence instead of throwing", () => {
  assert.equal(decodeGrpcMessage("a%FFb"), "a\ufffdb");
});

Deno.test("readMetadata() skips pseudo-headers and gRPC's own headers", () => {
  const fields: HeaderField[] = [
    [":path", "/a/b"],
    ["content-type", "application/grpc"],
    ["te", "trailers"],
    ["user-agent", "x"],
    ["grpc-timeout", "1S"],
    ["grpc-encoding", "identity"],
    ["grpc-accept-encoding", "gzip"],
    ["grpc-status", "0"],
    ["grpc-message", "m"],
    ["grpc-status-details-bin", "AAAA"],
    ["x-trace", "abc"],
  ];
  assert.deepEqual(readMetadata(fields), new Map([["x-trace", ["abc"]]]));
  assert.equal(
    readMetadata(fields.slice(0, -1)).size,
    0,
    "gRPC's own headers alone are no metadata",
  );
});

Deno.test("readMetadata() keeps text values whole and in order, repeated keys together", () => {
  const fields: HeaderField[] = [["x-a", "1, 2"], ["x-b", "b"], ["x-a", "3"]];
  assert.deepEqual(readMetadata(fields), new Map([["x-a", ["1, 2", "3"]], ["x-b", ["b"]]]));
});

Deno.test("readMetadata() decodes -bin values with or without base64 padding", async (t) => {
  const cases: [string, number[]][] = [
    ["AQ==", [1]],
    ["AQ", [1]],
    ["AQI=", [1, 2]],
    ["AQI", [1, 2]],
    ["AQID", [1, 2, 3]],
    ["", []],
    ["/+8", [0xff, 0xef]],
  ];
  for (const [value, expected] of cases) {
    await t.step(JSON.stringify(value), () => {
      const got = readMetadata([["x-id-bin", value]]).get("x-id-bin");
      assert.deepEqual(got, [new Uint8Array(expected)]);
    });
  }
});

Deno.test("readMetadata() drops a -bin value that is not base64", async (t) => {
  for (const value of ["A", "!!!!", "AQ=A", "AQ==="]) {
    await t.step(JSON.stringify(value), () => {
      assert.equal(readMetadata([["x-id-bin", value]]).get("x-id-bin"), undefined);
    });
  }
});

Deno.test("readMetadata() reads comma-separated -bin values as separate values", () => {
  const got = readMetadata([["x-id-bin", "AQ,AgM="], ["x-id-bin", "BA"]]).get("x-id-bin");
  assert.deepEqual(got, [new Uint8Array([1]), new Uint8Array([2, 3]), new Uint8Array([4])]);
});

Deno.test("metadataFields() sends text as it is and bytes as unpadded base64", () => {
  assert.deepEqual(
    metadataFields({
      "x-a": "text",
      "x-id-bin": new Uint8Array([1, 2]),
      "x-e-bin": new Uint8Array(),
    }),
    [["x-a", "text"], ["x-id-bin", "AQI"], ["x-e-bin", ""]],
  );
});

Deno.test("metadataFields() and readMetadata() round-trip binary values of every length mod 3", () => {
  for (let n = 0; n < 7; n++) {
    const value = Uint8Array.from({ length: n }, (_, i) => 250 + i);
    const fields = metadataFields({ "x-bin": value });
    assert.deepEqual(readMetadata(fields).get("x-bin"), [value], `length ${n}`);
  }
});

Deno.test("metadataFields() refuses reserved and pseudo-header names", async (t) => {
  for (
    const key of ["content-type", "te", "grpc-timeout", "grpc-status", "grpc-message", ":path"]
  ) {
    await t.step(key, () => {
      assert.throws(() => metadataFields({ [key]: "x" }), TypeError);
    });
  }
});

Deno.test("formatTimeout() refuses NaN instead of sending a malformed grpc-timeout", () => {
  assert.throws(() => formatTimeout(NaN), RangeError);
});
