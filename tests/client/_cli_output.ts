// Reading what the CLI printed, for the tests that run it.

/** The non-empty lines of an output. */
export function lines(text: string): string[] {
  return text.split("\n").filter((l) => l !== "");
}

/** A table's lines as cells (columns are two or more spaces apart). */
export function tableCells(text: string): string[][] {
  return text.trimEnd().split("\n").map((line) => line.trim().split(/\s{2,}/));
}
