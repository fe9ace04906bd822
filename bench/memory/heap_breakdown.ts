/**
 * Where a daemon's heap goes: reads a V8 heap snapshot (from
 * `bench/memory/heap_daemon.ts`) and prints, in markdown, the retained size
 * of each of the daemon's components (dominator tree: what would be freed
 * with it), the size reachable from it (shared parts counted again, the
 * difference shows what is held twice), and the pods' encoded bytes and
 * JSON objects by holder, each counted once.
 *
 * Usage: `deno run --allow-read --v8-flags=--max-old-space-size=4096
 *   bench/memory/heap_breakdown.ts FILE.heapsnapshot [--spaces FILE.spaces.json]`
 *
 * @module
 */

// deno-lint-ignore-file no-console

interface Snapshot {
  snapshot: {
    meta: {
      "node_fields": string[];
      "node_types": [string[], ...unknown[]];
      "edge_fields": string[];
      "edge_types": [string[], ...unknown[]];
    };
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}

/** The daemon's components, by constructor name, in the order they are reported. */
const COMPONENTS = [
  "PodCache",
  "ChangeLog",
  "QueryEngine",
  "PodIndex",
  "MaskedBytesCache",
  "FieldMaskCache",
  "EventHub",
  "PodMerger",
  "PodPipeline",
  "CriPodSource",
  "CriClient",
  "Relister",
  "PodsService",
  "PodQueryService",
  "GrpcServer",
  "MetricsRegistry",
  "Registry",
];

/** A loaded snapshot as flat arrays. */
class Graph {
  readonly count: number;
  readonly type: Uint8Array;
  readonly name: Uint32Array;
  readonly self: Float64Array;
  readonly firstEdge: Uint32Array;
  readonly edgeTo: Uint32Array;
  readonly edgeType: Uint8Array;
  readonly edgeName: Uint32Array;
  readonly strings: string[];
  readonly nodeTypes: string[];
  readonly edgeTypes: string[];

  constructor(s: Snapshot) {
    const nf = s.snapshot.meta.node_fields;
    const ef = s.snapshot.meta.edge_fields;
    const nw = nf.length;
    const ew = ef.length;
    const iType = nf.indexOf("type");
    const iName = nf.indexOf("name");
    const iSelf = nf.indexOf("self_size");
    const iEdges = nf.indexOf("edge_count");
    const eType = ef.indexOf("type");
    const eName = ef.indexOf("name_or_index");
    const eTo = ef.indexOf("to_node");
    this.count = s.nodes.length / nw;
    this.type = new Uint8Array(this.count);
    this.name = new Uint32Array(this.count);
    this.self = new Float64Array(this.count);
    this.firstEdge = new Uint32Array(this.count + 1);
    const edges = s.edges.length / ew;
    this.edgeTo = new Uint32Array(edges);
    this.edgeType = new Uint8Array(edges);
    this.edgeName = new Uint32Array(edges);
    let e = 0;
    for (let i = 0; i < this.count; i++) {
      const at = i * nw;
      this.type[i] = s.nodes[at + iType]!;
      this.name[i] = s.nodes[at + iName]!;
      this.self[i] = s.nodes[at + iSelf]!;
      this.firstEdge[i] = e;
      e += s.nodes[at + iEdges]!;
    }
    this.firstEdge[this.count] = e;
    for (let j = 0; j < edges; j++) {
      const at = j * ew;
      this.edgeType[j] = s.edges[at + eType]!;
      this.edgeName[j] = s.edges[at + eName]!;
      this.edgeTo[j] = s.edges[at + eTo]! / nw;
    }
    this.strings = s.strings;
    this.nodeTypes = s.snapshot.meta.node_types[0];
    this.edgeTypes = s.snapshot.meta.edge_types[0];
  }

  nodeName(i: number): string {
    return this.strings[this.name[i]!] ?? "";
  }

  nodeType(i: number): string {
    return this.nodeTypes[this.type[i]!] ?? "";
  }

  /** An edge's property name (element and hidden edges have an index instead). */
  edgeLabel(j: number): string {
    const t = this.edgeTypes[this.edgeType[j]!];
    return t === "element" || t === "hidden"
      ? String(this.edgeName[j])
      : this.strings[this.edgeName[j]!] ?? "";
  }

  isWeak(j: number): boolean {
    return this.edgeTypes[this.edgeType[j]!] === "weak";
  }
}

/** Immediate dominators (Cooper, Harvey and Kennedy's iterative algorithm) and retained sizes. */
function retainedSizes(g: Graph): Float64Array {
  const n = g.count;
  // Reverse postorder from the root (node 0), strong edges only.
  const order = new Int32Array(n).fill(-1);
  const post: number[] = [];
  const stack: number[] = [0];
  const cursor = new Uint32Array(n);
  const seen = new Uint8Array(n);
  seen[0] = 1;
  for (let i = 0; i < n; i++) cursor[i] = g.firstEdge[i]!;
  while (stack.length > 0) {
    const v = stack[stack.length - 1]!;
    if (cursor[v]! < g.firstEdge[v + 1]!) {
      const j = cursor[v]!++;
      if (g.isWeak(j)) continue;
      const w = g.edgeTo[j]!;
      if (!seen[w]) {
        seen[w] = 1;
        stack.push(w);
      }
    } else {
      stack.pop();
      order[v] = post.length;
      post.push(v);
    }
  }
  // Predecessors (strong edges between reachable nodes), as CSR.
  const predCount = new Uint32Array(n + 1);
  for (let v = 0; v < n; v++) {
    if (!seen[v]) continue;
    for (let j = g.firstEdge[v]!; j < g.firstEdge[v + 1]!; j++) {
      if (!g.isWeak(j)) predCount[g.edgeTo[j]! + 1]!++;
    }
  }
  for (let i = 0; i < n; i++) predCount[i + 1]! += predCount[i]!;
  const preds = new Uint32Array(predCount[n]!);
  const fill = predCount.slice(0, n);
  for (let v = 0; v < n; v++) {
    if (!seen[v]) continue;
    for (let j = g.firstEdge[v]!; j < g.firstEdge[v + 1]!; j++) {
      if (!g.isWeak(j)) preds[fill[g.edgeTo[j]!]!++] = v;
    }
  }
  const idom = new Int32Array(n).fill(-1);
  idom[0] = 0;
  const intersect = (a: number, b: number): number => {
    while (a !== b) {
      while (order[a]! < order[b]!) a = idom[a]!;
      while (order[b]! < order[a]!) b = idom[b]!;
    }
    return a;
  };
  for (let changed = true; changed;) {
    changed = false;
    for (let k = post.length - 2; k >= 0; k--) {
      const v = post[k]!;
      let d = -1;
      for (let p = predCount[v]!; p < predCount[v + 1]!; p++) {
        const u = preds[p]!;
        if (idom[u] === -1) continue;
        d = d === -1 ? u : intersect(u, d);
      }
      if (d !== -1 && idom[v] !== d) {
        idom[v] = d;
        changed = true;
      }
    }
  }
  const retained = new Float64Array(n);
  for (const v of post) retained[v]! += g.self[v]!;
  // Postorder visits children before their dominator.
  for (const v of post) {
    if (v !== 0 && idom[v]! >= 0) retained[idom[v]!]! += retained[v]!;
  }
  return retained;
}

/**
 * Sums the nodes reachable from `roots` without crossing `stop` nodes,
 * closures, code or weak and hidden-class edges: what a component holds,
 * shared parts included.
 */
function reachable(
  g: Graph,
  roots: readonly number[],
  stop: Set<number>,
  counted?: Uint8Array,
): number {
  const seen = new Set<number>(roots);
  const queue = [...roots];
  let size = 0;
  while (queue.length > 0) {
    const v = queue.pop()!;
    if (counted === undefined || !counted[v]) {
      size += g.self[v]!;
      if (counted) counted[v] = 1;
    }
    for (let j = g.firstEdge[v]!; j < g.firstEdge[v + 1]!; j++) {
      if (g.isWeak(j)) continue;
      const label = g.edgeLabel(j);
      if (label === "map" || label === "__proto__" || label === "constructor") continue;
      const w = g.edgeTo[j]!;
      if (seen.has(w) || stop.has(w)) continue;
      const t = g.nodeType(w);
      if (t === "closure" || t === "code" || t === "hidden" && g.nodeName(w) === "system / Map") {
        continue;
      }
      seen.add(w);
      queue.push(w);
    }
  }
  return size;
}

function child(g: Graph, v: number, label: string): number | undefined {
  for (let j = g.firstEdge[v]!; j < g.firstEdge[v + 1]!; j++) {
    if (g.edgeLabel(j) === label && !g.isWeak(j)) return g.edgeTo[j]!;
  }
  return undefined;
}

function mb(bytes: number): string {
  return (bytes / 1048576).toFixed(2);
}

async function main(): Promise<void> {
  const file = Deno.args[0];
  if (file === undefined) throw new TypeError("Usage: heap_breakdown.ts FILE.heapsnapshot");
  const g = new Graph(JSON.parse(await Deno.readTextFile(file)) as Snapshot);
  const retained = retainedSizes(g);
  const total = retained[0]!;
  const byName = new Map<string, number[]>();
  for (let i = 0; i < g.count; i++) {
    if (g.nodeType(i) !== "object") continue;
    const name = g.nodeName(i);
    if (!COMPONENTS.includes(name)) continue;
    let list = byName.get(name);
    if (list === undefined) byName.set(name, list = []);
    list.push(i);
  }
  const allComponents = new Set([...byName.values()].flat());
  console.log(`heap snapshot: ${mb(total)} MB reachable (self sizes; ${g.count} nodes)\n`);
  console.log("| component | instances | retained MB | reachable MB |");
  console.log("| --- | ---: | ---: | ---: |");
  for (const name of COMPONENTS) {
    const nodes = byName.get(name);
    if (nodes === undefined) continue;
    let r = 0;
    for (const v of nodes) r += retained[v]!;
    const stop = new Set([...allComponents].filter((v) => !nodes.includes(v)));
    console.log(
      `| ${name} | ${nodes.length} | ${mb(r)} | ${mb(reachable(g, nodes, stop))} |`,
    );
  }

  // The pods' bytes and JSON by holder, each node counted once, in this
  // order: the cache's current pods first, then what only others hold.
  const counted = new Uint8Array(g.count);
  const holders: [string, number[]][] = [];
  const cachedPods = (owner: string, field: string): number[] => {
    const out: number[] = [];
    for (const v of byName.get(owner) ?? []) {
      const f = child(g, v, field);
      if (f !== undefined) out.push(f);
    }
    return out;
  };
  holders.push(["PodCache #entries (current pods)", cachedPods("PodCache", "#entries")]);
  holders.push(["ChangeLog #events (history)", cachedPods("ChangeLog", "#events")]);
  holders.push(["QueryEngine #tombstones", cachedPods("QueryEngine", "#tombstones")]);
  holders.push(["MaskedBytesCache #entries", cachedPods("MaskedBytesCache", "#entries")]);
  holders.push(["MaskedBytesCache #lists", cachedPods("MaskedBytesCache", "#lists")]);
  holders.push(["MaskedBytesCache #frames", cachedPods("MaskedBytesCache", "#frames")]);
  holders.push(["PodMerger (per-source views)", byName.get("PodMerger") ?? []]);
  holders.push(["CriPodSource (records, last view)", byName.get("CriPodSource") ?? []]);
  holders.push(["QueryEngine indexes", [
    ...cachedPods("QueryEngine", "#live"),
    ...cachedPods("QueryEngine", "#tombIndex"),
  ]]);
  console.log("\n| held by (each byte counted once, first holder wins) | MB |");
  console.log("| --- | ---: |");
  for (const [label, roots] of holders) {
    if (roots.length === 0) continue;
    console.log(`| ${label} | ${mb(reachable(g, roots, allComponents, counted))} |`);
  }

  // Totals by kind of node, for what the components do not explain.
  const byKind = new Map<string, { size: number; count: number }>();
  for (let i = 0; i < g.count; i++) {
    const t = g.nodeType(i);
    const key = t === "object" || t === "native" || t === "hidden" ? `${t}: ${g.nodeName(i)}` : t;
    const k = byKind.get(key) ?? { size: 0, count: 0 };
    k.size += g.self[i]!;
    k.count++;
    byKind.set(key, k);
  }
  console.log("\n| node kind (self size, top 15) | count | MB |");
  console.log("| --- | ---: | ---: |");
  for (const [key, k] of [...byKind].sort((a, b) => b[1].size - a[1].size).slice(0, 15)) {
    console.log(`| ${key.slice(0, 60)} | ${k.count} | ${mb(k.size)} |`);
  }

  const at = Deno.args.indexOf("--spaces");
  if (at >= 0) {
    const s = JSON.parse(await Deno.readTextFile(Deno.args[at + 1]!)) as {
      spaces: { "space_name": string; "space_size": number; "space_used_size": number }[];
      rss: { rss: number; heapTotal: number; heapUsed: number; external: number };
    };
    console.log("\n| V8 space | size MB | used MB |");
    console.log("| --- | ---: | ---: |");
    for (const sp of s.spaces) {
      if (sp.space_size === 0) continue;
      console.log(`| ${sp.space_name} | ${mb(sp.space_size)} | ${mb(sp.space_used_size)} |`);
    }
    console.log(
      `\nRSS ${mb(s.rss.rss)} MB, V8 heap total ${mb(s.rss.heapTotal)} MB, used ${
        mb(s.rss.heapUsed)
      } MB, external ${mb(s.rss.external)} MB`,
    );
  }
}

await main();
