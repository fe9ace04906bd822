// Every link to a heading in the README and docs/ leads to a heading that
// exists (GitHub's anchors), and a heading named in quotes is one.
import assert from "node:assert/strict";

const ROOT = new URL("../", import.meta.url);

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes. */
function anchor(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, "").replace(/ /g, "-");
}

async function documents(): Promise<Map<string, string>> {
  const docs = new Map<string, string>();
  for (const name of ["README.md", "ARCHITECTURE.md", "BENCHMARKS.md", "RELIABILITY.md"]) {
    docs.set(name, await Deno.readTextFile(new URL(name, ROOT)));
  }
  for await (const e of Deno.readDir(new URL("docs/", ROOT))) {
    if (e.name.endsWith(".md")) {
      docs.set(`docs/${e.name}`, await Deno.readTextFile(new URL(`docs/${e.name}`, ROOT)));
    }
  }
  return docs;
}

function headings(text: string): string[] {
  let inCode = false;
  const out: string[] = [];
  for (const line of text.split("\n")) {
    if (line.startsWith("```")) inCode = !inCode;
    const m = /^#{1,6}\s+(.*)$/.exec(line);
    if (!inCode && m !== null) out.push(m[1]!);
  }
  return out;
}

Deno.test("links to headings in the README and docs/ lead somewhere", async () => {
  const docs = await documents();
  const anchors = new Map([...docs].map(([f, t]) => [f, new Set(headings(t).map(anchor))]));
  let links = 0;
  for (const [file, text] of docs) {
    for (const m of text.matchAll(/\]\(([^)\s#]*)#([^)\s]+)\)/g)) {
      links++;
      const target = m[1] === "" ? file : m[1]!.replace(/^\.\.\//, "").replace(/^\.\//, "");
      const known = anchors.get(target === "OPERATIONS.md" ? "docs/OPERATIONS.md" : target);
      assert.ok(known !== undefined, `${file}: link to unknown document ${m[1]}`);
      assert.ok(known.has(m[2]!), `${file}: no heading #${m[2]} in ${target}`);
    }
    // `see "Heading"` names a heading of the same document.
    for (const m of text.matchAll(/\bsee "([^"]+)"/g)) {
      assert.ok(headings(text).includes(m[1]!), `${file}: no heading "${m[1]}"`);
    }
  }
  assert.ok(links >= 2, "the check reads links");
});

Deno.test("anchor() spells GitHub's anchors", () => {
  assert.equal(anchor("The CLI"), "the-cli");
  assert.equal(anchor("What the daemon may do"), "what-the-daemon-may-do");
  assert.equal(
    anchor("Full pod specs from the kubelet (`--kubelet-url`)"),
    "full-pod-specs-from-the-kubelet---kubelet-url",
  );
});
