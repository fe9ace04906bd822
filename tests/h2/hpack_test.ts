import assert from "node:assert/strict";
import {
  DEFAULT_HEADER_TABLE_SIZE,
  encodeHeaderBlockWithoutIndexing,
  ENCODER_TABLE_SIZE_LIMIT,
  type HeaderField,
  HpackDecoder,
  HpackEncoder,
  HpackError,
  type ReadonlyDynamicTable,
} from "../../src/h2/hpack.ts";
import { DynamicTable, STATIC_TABLE } from "../../src/h2/hpack_tables.ts";
import { huffmanEncode } from "../../src/h2/huffman.ts";
import { Prng } from "../_support/prng.ts";

const NAMES = [
  ":method",
  ":path",
  ":authority",
  ":scheme",
  ":status",
  "content-type",
  "te",
  "user-agent",
  "grpc-timeout",
  "grpc-status",
  "grpc-message",
  "grpc-encoding",
  "authorization",
  "cookie",
  "content-length",
  "cache-control",
  "x-pods-trace",
  "accept-encoding",
];
const VALUES = ["", "GET", "POST", "/", "200", "application/grpc", "trailers", "0", "gzip"];

function randomText(rng: Prng, maxLength: number): string {
  const length = rng.int(maxLength + 1);
  const kind = rng.int(3);
  let text = "";
  for (let i = 0; i < length; i++) {
    const code = kind === 0
      ? 0x61 + rng.int(26) // lowercase: Huffman wins
      : kind === 1
      ? 0x20 + rng.int(95) // printable ASCII
      : rng.int(256); // any octet: raw often wins
    text += String.fromCharCode(code);
  }
  return text;
}

/** Header lists that mix static hits, repeats (dynamic hits) and fresh literals. */
function randomHeaders(rng: Prng): HeaderField[] {
  const fields: HeaderField[] = [];
  const count = rng.int(12);
  for (let i = 0; i < count; i++) {
    const name = rng.int(4) === 0 ? `x-${randomText(rng, 12)}` : rng.pick(NAMES);
    const roll = rng.int(10);
    const value = roll < 4
      ? rng.pick(VALUES)
      : roll < 9
      ? randomText(rng, 40)
      : randomText(rng, 3000);
    fields.push([name, value]);
  }
  return fields;
}

function fromHex(text: string): Uint8Array {
  return Uint8Array.from(text.replace(/\s+/g, "").match(/../g) ?? [], (p) => parseInt(p, 16));
}

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function assertTable(
  table: ReadonlyDynamicTable,
  entries: readonly HeaderField[],
  size: number,
): void {
  assert.deepEqual(table.entries(), entries);
  assert.equal(table.length, entries.length);
  assert.equal(table.size, size);
}

function assertThrowsHpack(fn: () => unknown, message?: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof HpackError, `expected HpackError, got ${err}`);
    if (message !== undefined) assert.match(err.message, message);
    return true;
  });
}

Deno.test("HpackDecoder decodes the RFC 7541 C.2 field representations", async (t) => {
  const cases: {
    name: string;
    block: string;
    field: HeaderField;
    table: HeaderField[];
    size: number;
  }[] = [
    {
      name: "C.2.1 literal with indexing",
      block: "400a637573746f6d2d6b65790d637573746f6d2d686561646572",
      field: ["custom-key", "custom-header"],
      table: [["custom-key", "custom-header"]],
      size: 55,
    },
    {
      name: "C.2.2 literal without indexing",
      block: "040c2f73616d706c652f70617468",
      field: [":path", "/sample/path"],
      table: [],
      size: 0,
    },
    {
      name: "C.2.3 literal never indexed",
      block: "100870617373776f726406736563726574",
      field: ["password", "secret"],
      table: [],
      size: 0,
    },
    { name: "C.2.4 indexed field", block: "82", field: [":method", "GET"], table: [], size: 0 },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const decoder = new HpackDecoder();
      const result = decoder.decode(fromHex(c.block));
      assert.deepEqual(result.headers, [c.field]);
      assert.equal(result.oversized, false);
      assert.equal(result.listSize, c.field[0].length + c.field[1].length + 32);
      assertTable(decoder.dynamicTable, c.table, c.size);
    });
  }
});

/** One message of an RFC 7541 C.3 to C.6 sequence, and the table after it. */
interface Step {
  block: string;
  headers: HeaderField[];
  table: HeaderField[];
  size: number;
}

const AUTHORITY: HeaderField = [":authority", "www.example.com"];
const NO_CACHE: HeaderField = ["cache-control", "no-cache"];
const CUSTOM: HeaderField = ["custom-key", "custom-value"];
const REQUESTS: Omit<Step, "block">[] = [
  {
    headers: [[":method", "GET"], [":scheme", "http"], [":path", "/"], AUTHORITY],
    table: [AUTHORITY],
    size: 57,
  },
  {
    headers: [[":method", "GET"], [":scheme", "http"], [":path", "/"], AUTHORITY, NO_CACHE],
    table: [NO_CACHE, AUTHORITY],
    size: 110,
  },
  {
    headers: [
      [":method", "GET"],
      [":scheme", "https"],
      [":path", "/index.html"],
      AUTHORITY,
      CUSTOM,
    ],
    table: [CUSTOM, NO_CACHE, AUTHORITY],
    size: 164,
  },
];

const PRIVATE: HeaderField = ["cache-control", "private"];
const DATE_21: HeaderField = ["date", "Mon, 21 Oct 2013 20:13:21 GMT"];
const DATE_22: HeaderField = ["date", "Mon, 21 Oct 2013 20:13:22 GMT"];
const LOCATION: HeaderField = ["location", "https://www.example.com"];
const GZIP: HeaderField = ["content-encoding", "gzip"];
const COOKIE: HeaderField = [
  "set-cookie",
  "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
];
const RESPONSES: Omit<Step, "block">[] = [
  {
    headers: [[":status", "302"], PRIVATE, DATE_21, LOCATION],
    table: [LOCATION, DATE_21, PRIVATE, [":status", "302"]],
    size: 222,
  },
  {
    headers: [[":status", "307"], PRIVATE, DATE_21, LOCATION],
    table: [[":status", "307"], LOCATION, DATE_21, PRIVATE],
    size: 222,
  },
  {
    headers: [[":status", "200"], PRIVATE, DATE_22, LOCATION, GZIP, COOKIE],
    table: [COOKIE, GZIP, DATE_22],
    size: 215,
  },
];

function withBlocks(steps: Omit<Step, "block">[], blocks: string[]): Step[] {
  return steps.map((step, i) => ({ ...step, block: blocks[i]! }));
}

const SEQUENCES: { name: string; maxTableSize: number; steps: Step[] }[] = [
  {
    name: "C.3 requests without Huffman",
    maxTableSize: 4096,
    steps: withBlocks(REQUESTS, [
      "828684410f7777772e6578616d706c652e636f6d",
      "828684be58086e6f2d6361636865",
      "828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565",
    ]),
  },
  {
    name: "C.4 requests with Huffman",
    maxTableSize: 4096,
    steps: withBlocks(REQUESTS, [
      "828684418cf1e3c2e5f23a6ba0ab90f4ff",
      "828684be5886a8eb10649cbf",
      "828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf",
    ]),
  },
  {
    name: "C.5 responses without Huffman",
    maxTableSize: 256,
    steps: withBlocks(RESPONSES, [
      "4803333032580770726976617465611d4d6f6e2c203231204f637420323031332032303a31333a323120474d54" +
      "6e1768747470733a2f2f7777772e6578616d706c652e636f6d",
      "4803333037c1c0bf",
      "88c1611d4d6f6e2c203231204f637420323031332032303a31333a323220474d54c05a04677a69707738666f" +
      "6f3d4153444a4b48514b425a584f5157454f50495541585157454f49553b206d61782d6167653d333630303b" +
      "2076657273696f6e3d31",
    ]),
  },
  {
    name: "C.6 responses with Huffman",
    maxTableSize: 256,
    steps: withBlocks(RESPONSES, [
      "488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c7" +
      "8f0b97c8e9ae82ae43d3",
      "4883640effc1c0bf",
      "88c16196d07abe941054d444a8200595040b8166e084a62d1bffc05a839bd9ab77ad94e7821dd7f2e6c7b335" +
      "dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007",
    ]),
  },
];

Deno.test("HpackDecoder decodes the RFC 7541 C.3 to C.6 sequences and keeps their tables", async (t) => {
  for (const sequence of SEQUENCES) {
    await t.step(sequence.name, async (t) => {
      const decoder = new HpackDecoder({ maxTableSize: sequence.maxTableSize });
      for (const [i, step] of sequence.steps.entries()) {
        await t.step(`message ${i + 1}`, () => {
          const result = decoder.decode(fromHex(step.block));
          assert.deepEqual(result.headers, step.headers);
          assert.equal(result.oversized, false);
          assertTable(decoder.dynamicTable, step.table, step.size);
        });
      }
    });
  }
});

Deno.test("HpackEncoder reproduces the RFC 7541 C.4 blocks byte for byte", () => {
  const sequence = SEQUENCES.find((s) => s.name.startsWith("C.4"))!;
  const encoder = new HpackEncoder();
  for (const step of sequence.steps) {
    assert.equal(hex(encoder.encode(step.headers)), step.block);
    assertTable(encoder.dynamicTable, step.table, step.size);
  }
});

Deno.test("HpackEncoder round-trips the RFC 7541 C.5 responses with its tables in step", () => {
  const encoder = new HpackEncoder({ maxTableSize: 256 });
  const decoder = new HpackDecoder({ maxTableSize: 256 });
  for (const step of RESPONSES) {
    const block = encoder.encode(step.headers);
    assert.deepEqual(decoder.decode(block).headers, step.headers);
    assert.deepEqual(decoder.dynamicTable.entries(), encoder.dynamicTable.entries());
    assert.equal(decoder.dynamicTable.size, encoder.dynamicTable.size);
  }
});

Deno.test("HpackDecoder reads the RFC 7541 C.1 integers in a size update", async (t) => {
  const cases = [
    { name: "C.1.1 10 in a 5-bit prefix", block: "2a", size: 10 },
    { name: "C.1.2 1337 in a 5-bit prefix", block: "3f9a0a", size: 1337 },
    { name: "30, just below the prefix limit", block: "3e", size: 30 },
    { name: "31, the prefix limit, needs a zero continuation", block: "3f00", size: 31 },
    { name: "a redundant zero continuation", block: "3f8000", size: 31 },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const decoder = new HpackDecoder();
      assert.deepEqual(decoder.decode(fromHex(c.block)).headers, []);
      assert.equal(decoder.dynamicTable.maxSize, c.size);
    });
  }
});

Deno.test("HpackDecoder rejects malformed blocks with HpackError", async (t) => {
  const cases: { name: string; block: string; message: RegExp; maxTableSize?: number }[] = [
    { name: "index 0", block: "80", message: /index "0"/ },
    { name: "index 62 with an empty dynamic table", block: "be", message: /index "62"/ },
    { name: "index far past the tables", block: "ff8001", message: /index "255"/ },
    { name: "name index 0 is a literal name, but 62 is past", block: "7e0161", message: /"62"/ },
    { name: "never-indexed name index past the tables", block: "1f3f00", message: /"78"/ },
    { name: "integer above 2^31 - 1", block: "ffffffffff0f", message: /exceeds/ },
    { name: "integer at exactly 2^31", block: "ff81ffffff07", message: /exceeds/ },
    {
      name: "integer with more than 5 continuation octets",
      block: "ff808080808000",
      message: /exceeds/,
    },
    { name: "integer cut short after its prefix", block: "ff", message: /cut short/ },
    { name: "integer cut short in its continuation", block: "ff80", message: /cut short/ },
    { name: "string length past the end", block: "400561", message: /past the end/ },
    { name: "string length cut short", block: "407f", message: /cut short/ },
    { name: "name string one octet short", block: "4001", message: /"1" octets/ },
    { name: "value missing entirely", block: "400161", message: /expected/ },
    { name: "literal name missing entirely", block: "00", message: /expected/ },
    { name: "huge string length", block: "007fffffff07", message: /past the end/ },
    {
      name: "size update above the setting",
      block: "3fe21f",
      message: /"4097" exceeds our setting "4096"/,
    },
    {
      name: "size update above a small setting",
      block: "3f62",
      message: /"129" exceeds our setting "128"/,
      maxTableSize: 128,
    },
    { name: "size update after a field", block: "8220", message: /follows a header field/ },
    { name: "size update after a literal", block: "0001610020", message: /follows/ },
    { name: "Huffman value with a whole octet of padding", block: "000161" + "81ff", message: /7/ },
    { name: "Huffman name holding EOS", block: "0084ffffffff00", message: /EOS/ },
    { name: "Huffman value with zero padding", block: "0001618118", message: /not all ones/ },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const options = c.maxTableSize === undefined ? {} : { maxTableSize: c.maxTableSize };
      assertThrowsHpack(() => new HpackDecoder(options).decode(fromHex(c.block)), c.message);
    });
  }
});

Deno.test("HpackDecoder refuses further blocks after an HpackError", () => {
  const decoder = new HpackDecoder();
  assertThrowsHpack(() => decoder.decode(fromHex("80")));
  assertThrowsHpack(() => decoder.decode(fromHex("82")), /an earlier block failed/);
});

Deno.test("HpackDecoder checks its arguments with RangeError", () => {
  assert.throws(() => new HpackDecoder({ maxTableSize: -1 }), RangeError);
  assert.throws(() => new HpackDecoder({ maxTableSize: 1.5 }), RangeError);
  assert.throws(() => new HpackDecoder({ maxTableSize: 2 ** 32 }), RangeError);
  assert.throws(() => new HpackDecoder().decode(fromHex("82"), -1), RangeError);
  assert.throws(() => new HpackDecoder().decode(fromHex("82"), NaN), RangeError);
});

Deno.test("HpackDecoder applies size updates only at the start of a block", async (t) => {
  const filled = "400161016240016301644001650166"; // a=b, c=d, e=f: 34 octets each
  await t.step("an update to 0 and back empties the table", () => {
    const decoder = new HpackDecoder();
    decoder.decode(fromHex(filled));
    assert.equal(decoder.dynamicTable.length, 3);
    const result = decoder.decode(fromHex("20" + "3fe11f" + "82"));
    assert.deepEqual(result.headers, [[":method", "GET"]]);
    assert.equal(decoder.dynamicTable.length, 0);
    assert.equal(decoder.dynamicTable.maxSize, 4096);
  });
  await t.step("a smaller update evicts the oldest entries", () => {
    const decoder = new HpackDecoder();
    decoder.decode(fromHex(filled));
    decoder.decode(fromHex("3f2b")); // 74 octets: room for two entries
    assertTable(decoder.dynamicTable, [["e", "f"], ["c", "d"]], 68);
    decoder.decode(fromHex("bf")); // index 63 is now c=d; 64 is gone
    assertThrowsHpack(() => decoder.decode(fromHex("c0")), /index "64"/);
  });
  await t.step("an update alone is a valid block", () => {
    const decoder = new HpackDecoder();
    assert.deepEqual(decoder.decode(fromHex("3f01")), {
      headers: [],
      oversized: false,
      listSize: 0,
    });
    assert.equal(decoder.dynamicTable.maxSize, 32);
  });
  await t.step("an update in a later block, after a field, is rejected", () => {
    const decoder = new HpackDecoder();
    decoder.decode(fromHex("3f01"));
    assertThrowsHpack(() => decoder.decode(fromHex("823f01")), /follows/);
  });
  await t.step("a setting above 4096 allows larger updates, from a 4096 start", () => {
    const decoder = new HpackDecoder({ maxTableSize: 65536 });
    assert.equal(decoder.dynamicTable.maxSize, DEFAULT_HEADER_TABLE_SIZE);
    decoder.decode(fromHex("3fe1ff03")); // 65536
    assert.equal(decoder.dynamicTable.maxSize, 65536);
  });
  await t.step("a setting below 4096 starts the table at the setting", () => {
    const decoder = new HpackDecoder({ maxTableSize: 0 });
    assert.equal(decoder.dynamicTable.maxSize, 0);
    decoder.decode(fromHex(filled));
    assert.equal(decoder.dynamicTable.length, 0);
  });
});

Deno.test("HpackEncoder.setMaxTableSize() announces the smallest size, then the final one", async (t) => {
  const cases: { name: string; sizes: number[]; prefix: string; final: number }[] = [
    { name: "one smaller size", sizes: [256], prefix: "3fe101", final: 256 },
    { name: "down then up", sizes: [100, 200], prefix: "3f45" + "3fa901", final: 200 },
    { name: "up then down", sizes: [200, 100], prefix: "3f45", final: 100 },
    { name: "down to 0 then back", sizes: [0, 4096], prefix: "20" + "3fe11f", final: 4096 },
    { name: "the same size again", sizes: [4096], prefix: "3fe11f", final: 4096 },
    {
      name: "above the encoder's limit",
      sizes: [1 << 20],
      prefix: "3fe11f",
      final: ENCODER_TABLE_SIZE_LIMIT,
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const encoder = new HpackEncoder();
      const decoder = new HpackDecoder();
      const first = encoder.encode([["x-a", "1"], ["x-b", "2"]]);
      decoder.decode(first);
      for (const size of c.sizes) encoder.setMaxTableSize(size);
      const block = encoder.encode([[":method", "GET"]]);
      assert.equal(hex(block), c.prefix + "82");
      decoder.decode(block);
      assert.equal(encoder.dynamicTable.maxSize, c.final);
      assert.equal(decoder.dynamicTable.maxSize, c.final);
      assert.deepEqual(decoder.dynamicTable.entries(), encoder.dynamicTable.entries());
      // Announced once: the next block starts with a field.
      assert.equal(hex(encoder.encode([[":method", "GET"]])), "82");
    });
  }
});

Deno.test("HpackEncoder announces a peer's table below 4096 in its first block", () => {
  const encoder = new HpackEncoder({ maxTableSize: 0 });
  assert.equal(hex(encoder.encode([["x-a", "1"]])).slice(0, 2), "20");
  assert.equal(encoder.dynamicTable.length, 0);
  assert.equal(hex(new HpackEncoder({ maxTableSize: 8192 }).encode([])), "");
  assert.equal(hex(new HpackEncoder({ maxTableSize: 4096 }).encode([])), "");
});

Deno.test("HpackEncoder.setMaxTableSize() rejects sizes that are not 32-bit integers", async (t) => {
  for (const size of [-1, 1.5, 2 ** 32, NaN, Infinity]) {
    await t.step(String(size), () => {
      assert.throws(() => new HpackEncoder().setMaxTableSize(size), RangeError);
      assert.throws(() => new HpackEncoder({ maxTableSize: size }), RangeError);
    });
  }
});

Deno.test("HpackEncoder picks a representation per field", async (t) => {
  const cases: { name: string; field: HeaderField; first: number; indexed: boolean }[] = [
    { name: "static match is one index", field: [":status", "200"], first: 0x88, indexed: false },
    {
      name: "custom field is added to the table",
      field: ["x-pods", "v1"],
      first: 0x40,
      indexed: true,
    },
    {
      name: "static name is referenced",
      field: ["content-type", "application/grpc"],
      first: 0x5f,
      indexed: true,
    },
    {
      name: "authorization is never indexed",
      field: ["authorization", "Bearer s3cr3t"],
      first: 0x1f,
      indexed: false,
    },
    { name: "cookie is never indexed", field: ["cookie", "a=b"], first: 0x1f, indexed: false },
    {
      name: "content-length is not indexed",
      field: ["content-length", "42"],
      first: 0x0f,
      indexed: false,
    },
    {
      name: "grpc-timeout is not indexed",
      field: ["grpc-timeout", "1S"],
      first: 0x00,
      indexed: false,
    },
    {
      name: "a value filling most of the table is not indexed",
      field: ["x-big", "v".repeat(3100)],
      first: 0x00,
      indexed: false,
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const encoder = new HpackEncoder();
      const decoder = new HpackDecoder();
      const block = encoder.encode([c.field]);
      assert.equal(block[0], c.first);
      assert.equal(encoder.dynamicTable.length, c.indexed ? 1 : 0);
      assert.deepEqual(decoder.decode(block).headers, [c.field]);
      const again = encoder.encode([c.field]);
      if (c.indexed) assert.equal(hex(again), "be");
      else assert.equal(hex(again), hex(block));
      decoder.decode(again);
    });
  }
});

Deno.test("HpackEncoder reuses dynamic names and Huffman-codes only when shorter", () => {
  const encoder = new HpackEncoder();
  encoder.encode([["x-pods", "one"]]);
  // Name from index 62, value raw: 3 octets of digits code to 2.
  assert.equal(hex(encoder.encode([["x-pods", "123"]])), "7e82" + "0899");
  // Octets with long codes stay raw.
  assert.equal(hex(encoder.encode([["x-pods", "\x00\x01"]])), "7e" + "020001");
});

Deno.test("HpackEncoder maps strings to octets one code unit each and rejects wider ones", () => {
  const every = Array.from({ length: 256 }, (_, i) => String.fromCharCode(i)).join("");
  const encoder = new HpackEncoder();
  const decoder = new HpackDecoder();
  assert.deepEqual(decoder.decode(encoder.encode([["x-octets", every]])).headers, [
    ["x-octets", every],
  ]);
  assert.equal(decoder.decode(encoder.encode([["x-octets", every]])).headers[0]![1], every);
  // "é" is one octet (0xe9), not UTF-8's two.
  const block = encodeHeaderBlockWithoutIndexing([["x-e", "\u00e9"]]);
  assert.equal(hex(block), "0003" + "782d65" + "01e9");
});

Deno.test("HpackEncoder.encode() rejects a code unit above 0xff with TypeError and no state change", () => {
  const encoder = new HpackEncoder();
  encoder.setMaxTableSize(1000);
  const before = encoder.dynamicTable.entries();
  assert.throws(
    () => encoder.encode([["x-ok", "fine"], ["x-bad", "caf\u00e9 \u20ac"]]),
    (err: unknown) => {
      assert.ok(err instanceof TypeError);
      assert.match(err.message, /header field "1": value holds code unit "U\+20AC" at "5"/);
      return true;
    },
  );
  assert.throws(() => encoder.encode([["\u{1f600}", ""]]), TypeError);
  assert.throws(
    () => encoder.encode([["x", 1 as unknown as string]]),
    /value is not a string/,
  );
  assert.deepEqual(encoder.dynamicTable.entries(), before);
  // The size update is still pending: nothing was sent.
  assert.equal(hex(encoder.encode([])), "3fc907");
  assert.throws(() => encodeHeaderBlockWithoutIndexing([["x", "\u0100"]]), TypeError);
});

Deno.test("encodeHeaderBlockWithoutIndexing() depends only on its input", () => {
  const fields: HeaderField[] = [
    [":status", "200"],
    ["content-type", "application/grpc"],
    ["grpc-status", "0"],
    ["authorization", "Bearer x"],
    ["x-pods", "v1"],
  ];
  const block = encodeHeaderBlockWithoutIndexing(fields);
  assert.equal(hex(block), hex(encodeHeaderBlockWithoutIndexing(fields)));
  assert.equal(
    hex(block),
    [
      "88", // :status 200: static index 8
      "0f10" + "8b1d75d0620d263d4c4d6564", // static name 31, Huffman value
      "00" + "889acac8b21234da8f" + "0130", // literal name (Huffman), raw "0": no shorter coded
      "1f08" + "86ba51d85b14f3", // authorization, never indexed
      "00" + "85f2b567911f" + "027631", // raw "v1": its code is no shorter
    ].join(""),
  );
  // Any decoder, whatever its table holds, reads it and keeps its table.
  const decoder = new HpackDecoder();
  decoder.decode(new HpackEncoder().encode([["x-pods", "other"]]));
  const before = decoder.dynamicTable.entries();
  assert.deepEqual(decoder.decode(block).headers, fields);
  assert.deepEqual(decoder.dynamicTable.entries(), before);
});

Deno.test("HpackDecoder.decode() past maxHeaderListSize keeps the table in step", () => {
  const encoder = new HpackEncoder();
  const decoder = new HpackDecoder();
  const fields: HeaderField[] = [
    [":method", "POST"], // 43
    ["x-first", "a".repeat(20)], // 59
    ["x-second", "b".repeat(40)], // 80: crosses 150
    ["content-length", "12345"], // 51, without indexing: measured only
    ["x-third", "c"], // 40, still added to the table
    [":method", "POST"], // 43
  ];
  const block = encoder.encode(fields);
  const result = decoder.decode(block, 150);
  assert.equal(result.oversized, true);
  assert.deepEqual(result.headers, fields.slice(0, 2));
  assert.equal(result.listSize, 43 + 59 + 80 + 51 + 40 + 43);
  assert.deepEqual(decoder.dynamicTable.entries(), encoder.dynamicTable.entries());
  assert.equal(decoder.dynamicTable.length, 3);
  // The next block refers to entries added past the limit.
  const next = encoder.encode([["x-second", "b".repeat(40)], ["x-third", "c"]]);
  assert.equal(hex(next), "bfbe");
  assert.deepEqual(decoder.decode(next, 150).headers, [
    ["x-second", "b".repeat(40)],
    ["x-third", "c"],
  ]);
});

Deno.test("HpackDecoder.decode() past maxHeaderListSize still validates skipped strings", () => {
  const decoder = new HpackDecoder();
  // x-a: a fits nothing at limit 0; the next literal's Huffman value is bad.
  assertThrowsHpack(() => decoder.decode(fromHex("0003782d6101610003782d6281ff"), 0), /7/);
  const ok = new HpackDecoder().decode(fromHex("0003782d610161" + "0003782d62811f"), 0);
  assert.deepEqual(ok, { headers: [], oversized: true, listSize: 36 + 36 });
});

Deno.test("HpackDecoder.decode() at exactly maxHeaderListSize keeps every field", () => {
  const block = encodeHeaderBlockWithoutIndexing([[":method", "GET"], ["x-a", "b"]]);
  const exact = new HpackDecoder().decode(block, 42 + 36);
  assert.equal(exact.oversized, false);
  assert.equal(exact.headers.length, 2);
  assert.equal(new HpackDecoder().decode(block, 42 + 35).oversized, true);
});

Deno.test("HpackEncoder and HpackDecoder stay in step over random header lists", () => {
  const rng = new Prng(2024);
  for (let run = 0; run < 20; run++) {
    const encoder = new HpackEncoder();
    const decoder = new HpackDecoder();
    for (let i = 0; i < 100; i++) {
      if (rng.int(10) === 0) {
        encoder.setMaxTableSize(rng.pick([0, 64, 256, 1024, 4096, 8192]));
        if (rng.int(2) === 0) encoder.setMaxTableSize(rng.pick([128, 4096]));
      }
      const fields = randomHeaders(rng);
      const block = encoder.encode(fields);
      const result = decoder.decode(block);
      assert.deepEqual(result.headers, fields);
      assert.equal(
        result.listSize,
        fields.reduce((sum, [n, v]) => sum + n.length + v.length + 32, 0),
      );
      assert.deepEqual(decoder.dynamicTable.entries(), encoder.dynamicTable.entries());
      assert.equal(decoder.dynamicTable.size, encoder.dynamicTable.size);
      assert.ok(encoder.dynamicTable.size <= encoder.dynamicTable.maxSize);
      const stateless = encodeHeaderBlockWithoutIndexing(fields);
      assert.deepEqual(decoder.decode(stateless).headers, fields);
    }
  }
});

Deno.test("HpackDecoder reads values sent again without indexing as a fresh decoder does, octets alike or not", () => {
  // A connection's decoder remembers the last few such values by their octets; the pool holds
  // values of equal length, and a plain value whose octets are another's Huffman code.
  const huffmanAbc = huffmanEncode(new TextEncoder().encode("abc"));
  const lookalike = String.fromCharCode(...huffmanAbc);
  const pool = [
    "abc",
    lookalike,
    "abd",
    "/v1alpha1.Pods/GetPod",
    "/v1alpha1.Pods/ListPods",
    "8",
    "9",
  ];
  const literal = (value: string, huffman: boolean, neverIndexed: boolean): number[] => {
    const octets = Uint8Array.from(value, (c) => c.charCodeAt(0));
    const coded = huffman ? huffmanEncode(octets) : octets;
    assert.ok(coded.length < 127, "a one-octet length");
    // `0000xxxx` / `0001xxxx` with name index 4 (:path), then the value's length and octets.
    return [neverIndexed ? 0x14 : 0x04, (huffman ? 0x80 : 0) | coded.length, ...coded];
  };
  const rng = new Prng(19);
  const connection = new HpackDecoder();
  for (let i = 0; i < 3000; i++) {
    const fields: number[] = [];
    const want: HeaderField[] = [];
    for (let n = 1 + rng.int(3); n > 0; n--) {
      const value = rng.int(5) === 0 ? randomText(rng, 30) : rng.pick(pool);
      fields.push(...literal(value, rng.int(2) === 0, rng.int(8) === 0));
      want.push([":path", value]);
    }
    const block = Uint8Array.from(fields);
    assert.deepEqual(connection.decode(block).headers, want, `block ${i}`);
    assert.deepEqual(new HpackDecoder().decode(block).headers, want, `block ${i}, fresh`);
  }
});

Deno.test("HpackDecoder throws nothing but HpackError on random input (fuzz)", async (t) => {
  const rng = new Prng(0x7541);
  function decodeOrHpackError(decoder: HpackDecoder, block: Uint8Array, limit: number): boolean {
    try {
      decoder.decode(block, limit);
      return true;
    } catch (err) {
      assert.ok(err instanceof HpackError, `${hex(block)}: ${err}`);
      return false;
    }
  }

  await t.step("random octets", () => {
    let decoded = 0;
    for (let i = 0; i < 30_000; i++) {
      const decoder = new HpackDecoder({ maxTableSize: rng.pick([0, 100, 4096, 65536]) });
      // Biased towards short blocks and small indices, which decode further.
      const block = Uint8Array.from(
        { length: rng.int(40) },
        () => rng.int(3) === 0 ? rng.int(256) : rng.pick([0x00, 0x40, 0x82, 0xbe, 0x01, 0x61]),
      );
      if (decodeOrHpackError(decoder, block, rng.pick([Infinity, 100]))) decoded++;
    }
    assert.ok(decoded > 500, `only ${decoded} blocks decoded`);
  });

  // Valid sequences, then a cut or a flipped octet in one block.
  const sequences: Uint8Array[][] = [];
  for (let i = 0; i < 50; i++) {
    const encoder = new HpackEncoder();
    sequences.push(Array.from({ length: 8 }, () => encoder.encode(randomHeaders(rng))));
  }
  await t.step("truncated blocks", () => {
    for (let i = 0; i < 10_000; i++) {
      const blocks = rng.pick(sequences);
      const k = rng.int(blocks.length);
      const decoder = new HpackDecoder();
      for (const block of blocks.slice(0, k)) decoder.decode(block);
      const block = blocks[k]!;
      decodeOrHpackError(decoder, block.subarray(0, rng.int(block.length + 1)), Infinity);
    }
  });
  await t.step("mutated blocks", () => {
    for (let i = 0; i < 10_000; i++) {
      const blocks = rng.pick(sequences);
      const k = rng.int(blocks.length);
      const decoder = new HpackDecoder();
      for (const block of blocks.slice(0, k)) decoder.decode(block);
      const block = blocks[k]!.slice();
      for (let flips = 1 + rng.int(3); flips > 0 && block.length > 0; flips--) {
        block[rng.int(block.length)]! ^= 1 << rng.int(8);
      }
      if (decodeOrHpackError(decoder, block, rng.pick([Infinity, 200]))) {
        // The decoder survived: it must still decode the next block or fail cleanly.
        const next = blocks[k + 1];
        if (next !== undefined) decodeOrHpackError(decoder, next, Infinity);
      }
    }
  });
});

Deno.test("DynamicTable evicts oldest first and keeps its search indices", () => {
  const table = new DynamicTable(100, { searchable: true });
  table.add(["a", "1"]); // 34
  table.add(["b", "2"]);
  table.add(["a", "3"]); // 102 > 100: a=1 goes
  assertTable(table, [["a", "3"], ["b", "2"]], 68);
  assert.equal(table.findField("a", "1"), -1);
  assert.equal(table.findField("a", "3"), 0);
  assert.equal(table.findName("a"), 0);
  assert.equal(table.findField("b", "2"), 1);
  table.add(["c", "4"]); // b=2 goes
  assert.equal(table.findName("b"), -1);
  assert.equal(table.findField("a", "3"), 1);
  table.add(["x", "y".repeat(100)]); // larger than the table: empties it
  assertTable(table, [], 0);
  assert.equal(table.findName("a"), -1);
  assert.equal(table.findName("c"), -1);
  for (let i = 0; i < 40; i++) table.add(["n", String(i % 10)]); // wraps the ring
  assertTable(table, [["n", "9"], ["n", "8"]], 68);
  assert.equal(table.get(2), undefined);
  assert.equal(table.get(-1), undefined);
  table.resize(40);
  assertTable(table, [["n", "9"]], 34);
  assert.equal(table.findField("n", "8"), -1);
  assert.equal(table.findName("n"), 0);
  assert.throws(() => table.resize(-1), RangeError);
});

Deno.test("STATIC_TABLE holds the 61 entries of RFC 7541 Appendix A", () => {
  assert.equal(STATIC_TABLE.length, 61);
  assert.deepEqual(STATIC_TABLE[0], [":authority", ""]);
  assert.deepEqual(STATIC_TABLE[1], [":method", "GET"]);
  assert.deepEqual(STATIC_TABLE[7], [":status", "200"]);
  assert.deepEqual(STATIC_TABLE[15], ["accept-encoding", "gzip, deflate"]);
  assert.deepEqual(STATIC_TABLE[30], ["content-type", ""]);
  assert.deepEqual(STATIC_TABLE[54], ["set-cookie", ""]);
  assert.deepEqual(STATIC_TABLE[60], ["www-authenticate", ""]);
  assert.ok(Object.isFrozen(STATIC_TABLE) && STATIC_TABLE.every(Object.isFrozen));
});
