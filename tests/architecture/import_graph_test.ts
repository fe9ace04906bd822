/**
 * The import graph of `src/`: no file imports itself through others, no
 * folder does, and no folder imports one that sits above it in the data path
 * (ARCHITECTURE.md draws the same layers). A new folder or top-level file
 * must be placed in {@linkcode LAYERS} before it is imported.
 */

import assert from "node:assert/strict";

const SRC = new URL("../../src/", import.meta.url);

/**
 * Layers, lowest first: a file may import its own folder and any lower
 * layer, never a higher one. Top-level files of `src/` are named by file.
 */
const LAYERS: readonly (readonly string[])[] = [
  [
    "backoff.ts",
    "bytes_concat.ts",
    "bytes_equal.ts",
    "churn_map.ts",
    "clock.ts",
    "duration.ts",
    "log.ts",
    "serial_queue.ts",
    "sleep.ts",
    "version.ts",
  ],
  ["config_flags.ts", "http1", "listen", "model"],
  ["config.ts", "fieldmask", "metrics", "ratelimit", "status", "tls"],
  ["h2", "proto"],
  ["grpc"],
  ["sources"],
  ["relist"],
  ["cache", "merge"],
  ["events"],
  ["query"],
  ["pipeline"],
  ["serving"],
  ["client", "kubeapi", "server"],
  ["sim"],
  ["daemon.ts", "daemon_permissions.ts"],
];

const RANK = new Map(LAYERS.flatMap((names, rank) => names.map((n) => [n, rank] as const)));

/** `import … from "./x.ts"` and `export … from "./x.ts"` at the start of a line (not in JSDoc). */
const IMPORT_REGEXP = /^(?:import|export)\b[^;]*?\bfrom\s+["'](\.{1,2}\/[^"']+)["']/gms;

async function sourceFiles(dir: URL, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const path = prefix + entry.name;
    if (entry.isDirectory) {
      out.push(...await sourceFiles(new URL(`${entry.name}/`, dir), `${path}/`));
    } else if (entry.name.endsWith(".ts")) out.push(path);
  }
  return out;
}

function resolve(from: string, specifier: string): string {
  const parts = from.split("/").slice(0, -1);
  for (const part of specifier.split("/")) {
    if (part === ".") continue;
    if (part === "..") parts.pop();
    else parts.push(part);
  }
  return parts.join("/");
}

/** The folder (or top-level file) a path of `src/` belongs to. */
function areaOf(path: string): string {
  return path.split("/")[0]!;
}

async function importGraph(): Promise<Map<string, Set<string>>> {
  const graph = new Map<string, Set<string>>();
  for (const file of await sourceFiles(SRC)) {
    const text = await Deno.readTextFile(new URL(file, SRC));
    const targets = new Set<string>();
    for (const match of text.matchAll(IMPORT_REGEXP)) {
      const target = resolve(file, match[1]!);
      if (!target.startsWith("..")) targets.add(target);
    }
    graph.set(file, targets);
  }
  return graph;
}

/** Strongly connected components with more than one node (or a self-loop): the cycles. */
function cycles(graph: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || graph.get(v)?.has(v)) found.push(component.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return found;
}

Deno.test("src/ has no import cycle between files", async () => {
  assert.deepEqual(cycles(await importGraph()), []);
});

Deno.test("src/ has no import cycle between folders", async () => {
  const areas = new Map<string, Set<string>>();
  for (const [file, targets] of await importGraph()) {
    const from = areaOf(file);
    const set = areas.get(from) ?? new Set<string>();
    areas.set(from, set);
    for (const target of targets) if (areaOf(target) !== from) set.add(areaOf(target));
  }
  assert.deepEqual(cycles(areas), []);
});

Deno.test("src/ has no import from a lower layer up to a higher one", async () => {
  const graph = await importGraph();
  const unplaced = [...new Set([...graph.keys()].map(areaOf))].filter((a) => !RANK.has(a));
  assert.deepEqual(unplaced, [], "place these in LAYERS (and in ARCHITECTURE.md)");
  const upward: string[] = [];
  for (const [file, targets] of graph) {
    for (const target of targets) {
      if (RANK.get(areaOf(target))! > RANK.get(areaOf(file))!) upward.push(`${file} -> ${target}`);
    }
  }
  assert.deepEqual(upward, []);
});
