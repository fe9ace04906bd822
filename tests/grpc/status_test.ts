import assert from "node:assert/strict";
import {
  goCodeName,
  GrpcError,
  parseStatusCode,
  STATUS,
  statusFromHttp,
} from "../../src/grpc/status.ts";

Deno.test("STATUS numbers the 17 gRPC codes 0 to 16", () => {
  const values = Object.values(STATUS).sort((a, b) => a - b);
  assert.deepEqual(values, Array.from({ length: 17 }, (_, i) => i));
  assert.equal(STATUS.OK, 0);
  assert.equal(STATUS.DEADLINE_EXCEEDED, 4);
  assert.equal(STATUS.RESOURCE_EXHAUSTED, 8);
  assert.equal(STATUS.UNIMPLEMENTED, 12);
  assert.equal(STATUS.INTERNAL, 13);
  assert.equal(STATUS.UNAVAILABLE, 14);
  assert.equal(STATUS.UNAUTHENTICATED, 16);
});

Deno.test("GrpcError carries its code and message and is an Error", () => {
  const err = new GrpcError(STATUS.NOT_FOUND, 'pod "a" not found');
  assert.ok(err instanceof Error);
  assert.equal(err.name, "GrpcError");
  assert.equal(err.code, STATUS.NOT_FOUND);
  assert.equal(err.message, 'pod "a" not found');
});

Deno.test("goCodeName() names every code as Go's codes.Code.String() does", async (t) => {
  const cases: [number, string][] = [
    [0, "OK"],
    [1, "Canceled"],
    [2, "Unknown"],
    [3, "InvalidArgument"],
    [4, "DeadlineExceeded"],
    [5, "NotFound"],
    [6, "AlreadyExists"],
    [7, "PermissionDenied"],
    [8, "ResourceExhausted"],
    [9, "FailedPrecondition"],
    [10, "Aborted"],
    [11, "OutOfRange"],
    [12, "Unimplemented"],
    [13, "Internal"],
    [14, "Unavailable"],
    [15, "DataLoss"],
    [16, "Unauthenticated"],
    [17, "Code(17)"],
    [-1, "Code(-1)"],
  ];
  for (const [code, name] of cases) {
    await t.step(`${code} is ${name}`, () => assert.equal(goCodeName(code), name));
  }
});

Deno.test("parseStatusCode() takes 0 to 16 in decimal and nothing else", async (t) => {
  const cases: [string | undefined, number | undefined][] = [
    ["0", 0],
    ["00", 0],
    ["5", 5],
    ["16", 16],
    ["17", undefined],
    ["99", undefined],
    ["007", undefined],
    ["-1", undefined],
    ["+1", undefined],
    [" 1", undefined],
    ["1 ", undefined],
    ["1a", undefined],
    ["0x1", undefined],
    ["", undefined],
    [undefined, undefined],
  ];
  for (const [value, code] of cases) {
    await t.step(
      JSON.stringify(value) ?? "undefined",
      () => assert.equal(parseStatusCode(value), code),
    );
  }
});

Deno.test("statusFromHttp() follows gRPC's HTTP to status mapping", async (t) => {
  const cases: [number, number][] = [
    [400, STATUS.INTERNAL],
    [401, STATUS.UNAUTHENTICATED],
    [403, STATUS.PERMISSION_DENIED],
    [404, STATUS.UNIMPLEMENTED],
    [429, STATUS.UNAVAILABLE],
    [502, STATUS.UNAVAILABLE],
    [503, STATUS.UNAVAILABLE],
    [504, STATUS.UNAVAILABLE],
    [200, STATUS.UNKNOWN],
    [405, STATUS.UNKNOWN],
    [415, STATUS.UNKNOWN],
    [500, STATUS.UNKNOWN],
    [NaN, STATUS.UNKNOWN],
  ];
  for (const [http, code] of cases) {
    await t.step(`HTTP ${http}`, () => assert.equal(statusFromHttp(http), code));
  }
});
