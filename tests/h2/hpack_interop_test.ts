// An independent peer must read our blocks and we must read its blocks: here
// Python's hpack (Debian's python3-hpack, which python3-h2 depends on), over
// the same random header lists, with table size changes on both sides.
import assert from "node:assert/strict";
import {
  encodeHeaderBlockWithoutIndexing,
  type HeaderField,
  HpackDecoder,
  HpackEncoder,
} from "../../src/h2/hpack.ts";
import { huffmanDecode, huffmanEncode } from "../../src/h2/huffman.ts";

const PYTHON = "/usr/bin/python3";

/**
 * Reads a JSON request on stdin. Decodes `ours` (hex blocks) in order with one
 * Decoder, reporting each block's fields, their never-indexed flags and the
 * table after it; encodes `theirs` with one Encoder; with hpack's own Huffman
 * coder, codes each `huffman` item's `plain` and decodes its `coded` (our
 * coding of it). Strings travel as latin1, octets as hex.
 */
const PEER_SCRIPT = `
import json, sys
from hpack import Decoder, Encoder, NeverIndexedHeaderTuple
from hpack.huffman import HuffmanEncoder
from hpack.huffman_constants import REQUEST_CODES, REQUEST_CODES_LENGTH
from hpack.huffman_table import decode_huffman

def text(raw):
    return bytes(raw).decode("latin-1")

def octets(value):
    return value.encode("latin-1")

request = json.load(sys.stdin)
decoder = Decoder(max_header_list_size=1 << 30)
decoded = []
for block in request["ours"]:
    fields = decoder.decode(bytes.fromhex(block), raw=True)
    table = decoder.header_table
    decoded.append({
        "headers": [[text(n), text(v)] for n, v in fields],
        "never_indexed": [not f.indexable for f in fields],
        "table": [[text(n), text(v)] for n, v in table.dynamic_entries],
        "size": table._current_size,
        "max_size": table.maxsize,
    })

encoder = Encoder()
blocks = []
for item in request["theirs"]:
    if item["table_size"] is not None:
        encoder.header_table_size = item["table_size"]
    fields = [
        NeverIndexedHeaderTuple(octets(n), octets(v)) if secret else (octets(n), octets(v))
        for (n, v), secret in zip(item["headers"], item["secret"])
    ]
    blocks.append({
        "block": encoder.encode(fields, huffman=item["huffman"]).hex(),
        "table": [[text(n), text(v)] for n, v in encoder.header_table.dynamic_entries],
    })

coder = HuffmanEncoder(REQUEST_CODES, REQUEST_CODES_LENGTH)
huffman = [
    {
        "coded": coder.encode(bytes.fromhex(item["plain"])).hex(),
        "decoded": decode_huffman(bytes.fromhex(item["coded"])).hex(),
    }
    for item in request["huffman"]
]
json.dump({"decoded": decoded, "blocks": blocks, "huffman": huffman}, sys.stdout)
`;
import { Prng } from "../_support/prng.ts";
import { PEERS, requirePeer } from "../_support/peers.ts";

const NAMES = [
  ":method",
  ":path",
  ":authority",
  ":status",
  "content-type",
  "te",
  "user-agent",
  "grpc-timeout",
  "grpc-status",
  "grpc-message",
  "authorization",
  "cookie",
  "content-length",
  "cache-control",
];
const VALUES = ["", "POST", "/v1alpha1.Pods/ListPods", "200", "application/grpc", "trailers", "0"];

function randomText(rng: Prng, maxLength: number): string {
  const length = rng.int(maxLength + 1);
  const kind = rng.int(3);
  let text = "";
  for (let i = 0; i < length; i++) {
    const code = kind === 0 ? 0x61 + rng.int(26) : kind === 1 ? 0x20 + rng.int(95) : rng.int(256);
    text += String.fromCharCode(code);
  }
  return text;
}

function randomHeaders(rng: Prng): HeaderField[] {
  return Array.from({ length: rng.int(12) }, (): HeaderField => {
    const name = rng.int(4) === 0 ? `x-${randomText(rng, 10)}` : rng.pick(NAMES);
    const roll = rng.int(10);
    const value = roll < 4
      ? rng.pick(VALUES)
      : roll < 9
      ? randomText(rng, 40)
      : randomText(rng, 2000);
    return [name, value];
  });
}

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function fromHex(text: string): Uint8Array {
  return Uint8Array.from(text.match(/../g) ?? [], (pair) => parseInt(pair, 16));
}

interface PeerReport {
  decoded: {
    headers: HeaderField[];
    never_indexed: boolean[];
    table: HeaderField[];
    size: number;
    max_size: number;
  }[];
  blocks: { block: string; table: HeaderField[] }[];
  huffman: { coded: string; decoded: string }[];
}

const peer = requirePeer(PEERS.hpack);

Deno.test({
  name: peer.name(
    "HpackEncoder and HpackDecoder interoperate with Python's hpack over random header lists",
  ),
  ignore: peer.ignore,
  async fn() {
    peer.check();
    const rng = new Prng(9113);
    const LISTS = 300;

    // Ours → theirs: one connection's worth of blocks, with the peer's
    // setting changing now and then, and stateless blocks in between.
    const encoder = new HpackEncoder();
    const ours: { headers: HeaderField[]; block: Uint8Array; stateless: boolean }[] = [];
    const ourTables: { table: HeaderField[]; size: number; maxSize: number }[] = [];
    for (let i = 0; i < LISTS; i++) {
      const headers = randomHeaders(rng);
      const stateless = rng.int(8) === 0;
      if (!stateless && rng.int(12) === 0) {
        encoder.setMaxTableSize(rng.pick([0, 256, 1024, 4096, 65536]));
        if (rng.int(2) === 0) encoder.setMaxTableSize(rng.pick([512, 4096]));
      }
      const block = stateless ? encodeHeaderBlockWithoutIndexing(headers) : encoder.encode(headers);
      ours.push({ headers, block, stateless });
      const table = encoder.dynamicTable;
      ourTables.push({ table: table.entries(), size: table.size, maxSize: table.maxSize });
    }

    // Theirs → ours: Python's choices of Huffman, never-indexed fields and
    // table size changes (which it announces all, in order).
    const theirs = Array.from({ length: LISTS }, () => {
      const headers = randomHeaders(rng);
      return {
        headers,
        secret: headers.map(() => rng.int(6) === 0),
        huffman: rng.int(4) !== 0,
        table_size: rng.int(15) === 0 ? rng.pick([0, 100, 2048, 4096]) : null,
      };
    });

    // Huffman: every octet alone, then random strings.
    const huffmanInputs = [
      ...Array.from({ length: 256 }, (_, i) => new Uint8Array([i])),
      ...Array.from(
        { length: 200 },
        () => Uint8Array.from({ length: rng.int(64) }, () => rng.int(256)),
      ),
    ];
    const request = {
      ours: ours.map((o) => hex(o.block)),
      theirs,
      huffman: huffmanInputs.map((bytes) => ({
        plain: hex(bytes),
        coded: hex(huffmanEncode(bytes)),
      })),
    };

    const child = new Deno.Command(PYTHON, {
      args: ["-c", PEER_SCRIPT],
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(JSON.stringify(request)));
    await writer.close();
    const run = await child.output();
    assert.ok(run.success, new TextDecoder().decode(run.stderr));
    const report = JSON.parse(new TextDecoder().decode(run.stdout)) as PeerReport;

    for (const [i, mine] of ours.entries()) {
      const theirView = report.decoded[i]!;
      assert.deepEqual(theirView.headers, mine.headers, `block ${i}`);
      // Secrets go never-indexed; an empty one matches the static table instead.
      const secret = mine.headers.map(([name, value]) =>
        (name === "authorization" || name === "cookie") && value !== ""
      );
      assert.deepEqual(theirView.never_indexed, secret, `block ${i}`);
      assert.deepEqual(theirView.table, ourTables[i]!.table, `table after block ${i}`);
      assert.equal(theirView.size, ourTables[i]!.size, `table size after block ${i}`);
      assert.equal(theirView.max_size, ourTables[i]!.maxSize, `table max after block ${i}`);
    }

    const decoder = new HpackDecoder();
    for (const [i, item] of theirs.entries()) {
      const result = decoder.decode(fromHex(report.blocks[i]!.block));
      assert.deepEqual(result.headers, item.headers, `Python block ${i}`);
      assert.deepEqual(
        decoder.dynamicTable.entries(),
        report.blocks[i]!.table,
        `table after Python block ${i}`,
      );
    }

    // The random lists did reach what the test is about.
    const startsWithSizeUpdate = (block: Uint8Array) => (block[0]! & 0xe0) === 0x20;
    assert.ok(ours.some((o) => startsWithSizeUpdate(o.block)), "no size update of ours");
    assert.ok(ours.some((o) => o.stateless && o.headers.length > 0), "no stateless block");
    assert.ok(report.decoded.some((d) => d.never_indexed.includes(true)), "no never-indexed field");
    assert.ok(
      report.blocks.some((b) => startsWithSizeUpdate(fromHex(b.block))),
      "no size update of Python's",
    );
    assert.ok(ourTables.some((t) => t.table.length > 20), "our table never filled up");

    for (const [i, bytes] of huffmanInputs.entries()) {
      const { coded, decoded } = report.huffman[i]!;
      assert.equal(coded, request.huffman[i]!.coded, `Huffman code of ${hex(bytes)}`);
      assert.equal(decoded, hex(bytes), `Python decoding our code of ${hex(bytes)}`);
      assert.equal(hex(huffmanDecode(fromHex(coded))), hex(bytes));
    }
  },
});
