/**
 * HPACK cost of a typical gRPC request's headers (grpc-go's): decoding the
 * block a new connection's first request carries (Huffman literals the
 * decoder adds to its table), a repeat request (indices), and a stateless
 * block (static names, Huffman literals, no table); then encoding them.
 *
 * @module
 */

import {
  encodeHeaderBlockWithoutIndexing,
  type HeaderField,
  HpackDecoder,
  HpackEncoder,
} from "../src/h2/hpack.ts";
import { huffmanDecode, huffmanEncode } from "../src/h2/huffman.ts";

const REQUEST: readonly HeaderField[] = [
  [":method", "POST"],
  [":scheme", "http"],
  [":path", "/v1alpha1.Pods/ListPods"],
  [":authority", "localhost"],
  ["content-type", "application/grpc"],
  ["te", "trailers"],
  ["user-agent", "grpc-go/1.33.0"],
  ["grpc-timeout", "1S"],
];

const FIRST_BLOCK = new HpackEncoder().encode(REQUEST);
const REPEAT_ENCODER = new HpackEncoder();
REPEAT_ENCODER.encode(REQUEST);
const REPEAT_BLOCK = REPEAT_ENCODER.encode(REQUEST);
const STATELESS_BLOCK = encodeHeaderBlockWithoutIndexing(REQUEST);

// Decoding the first block again and again re-adds its entries, evicting
// older copies once the table is full: the steady-state cost of literals.
const FIRST_DECODER = new HpackDecoder();
const REPEAT_DECODER = new HpackDecoder();
REPEAT_DECODER.decode(FIRST_BLOCK);
const STATELESS_DECODER = new HpackDecoder();

const PATH = new TextEncoder().encode("/v1alpha1.Pods/ListPods");
const PATH_CODED = huffmanEncode(PATH);

Deno.bench({
  group: "decode gRPC request headers",
  name: `stateless block (${STATELESS_BLOCK.length} octets)`,
  baseline: true,
  fn() {
    STATELESS_DECODER.decode(STATELESS_BLOCK);
  },
});
Deno.bench({
  group: "decode gRPC request headers",
  name: `first request, adds to the table (${FIRST_BLOCK.length} octets)`,
  fn() {
    FIRST_DECODER.decode(FIRST_BLOCK);
  },
});
Deno.bench({
  group: "decode gRPC request headers",
  name: `repeat request, indices (${REPEAT_BLOCK.length} octets)`,
  fn() {
    REPEAT_DECODER.decode(REPEAT_BLOCK);
  },
});

Deno.bench({
  group: "encode gRPC request headers",
  name: "encodeHeaderBlockWithoutIndexing()",
  baseline: true,
  fn() {
    encodeHeaderBlockWithoutIndexing(REQUEST);
  },
});
Deno.bench({
  group: "encode gRPC request headers",
  name: "HpackEncoder.encode(), repeat request",
  fn() {
    REPEAT_ENCODER.encode(REQUEST);
  },
});
Deno.bench({
  group: "encode gRPC request headers",
  name: "HpackEncoder.encode(), new connection",
  fn() {
    new HpackEncoder().encode(REQUEST);
  },
});

Deno.bench({
  group: "Huffman, 23-octet :path",
  name: "huffmanDecode()",
  baseline: true,
  fn() {
    huffmanDecode(PATH_CODED);
  },
});
Deno.bench({
  group: "Huffman, 23-octet :path",
  name: "huffmanEncode()",
  fn() {
    huffmanEncode(PATH);
  },
});
