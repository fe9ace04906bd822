/**
 * The README's shell examples, for tests that run them as written: the
 * commands of the `sh` code blocks under a heading, one per logical line
 * (backslash continuations joined, `#` comments and blank lines dropped).
 *
 * @module
 */

const README = new URL("../../README.md", import.meta.url);

/**
 * The commands of the `sh` blocks between `heading` and the next heading of
 * the same or a higher level.
 *
 * @param heading The heading's text, without the `#`s.
 * @returns The commands, in order.
 * @throws {Error} When the heading or a block under it is missing.
 */
export async function readmeCommands(heading: string): Promise<string[]> {
  const lines = (await Deno.readTextFile(README)).split("\n");
  const at = lines.findIndex((l) => l.replace(/^#+\s+/, "") === heading && /^#+\s/.test(l));
  if (at < 0) throw new Error(`README has no heading "${heading}"`);
  const level = /^#+/.exec(lines[at]!)![0].length;
  const commands: string[] = [];
  let inBlock = false;
  let pending = "";
  for (const line of lines.slice(at + 1)) {
    const h = /^(#+)\s/.exec(line);
    if (!inBlock && h !== null && h[1]!.length <= level) break;
    if (line.startsWith("```")) {
      inBlock = !inBlock && line === "```sh";
      continue;
    }
    if (!inBlock) continue;
    const text = pending + line.replace(/^\s+/, pending === "" ? "" : " ");
    if (text.endsWith("\\")) {
      pending = text.slice(0, -1).trimEnd() + " ";
      continue;
    }
    pending = "";
    const command = text.replace(/\s+#\s.*$/, "").trim();
    if (command !== "" && !command.startsWith("#")) commands.push(command);
  }
  if (commands.length === 0) throw new Error(`README has no sh block under "${heading}"`);
  return commands;
}
