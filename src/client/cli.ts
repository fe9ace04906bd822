/**
 * The client subcommands: `list`, `get UID`, `watch`, with `--socket`,
 * `--fields a.b,c.d` and `-o table|json|yaml`.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { stringify as toYaml } from "yaml";
import type { PodObject } from "../model/pod.ts";
import { SERVE_FLAGS } from "../config_flags.ts";
import { type ClientWatchEvent, PodsClient } from "./pods_client.ts";
import { alignColumns, POD_TABLE_HEADER, podRow } from "./pod_table.ts";

/** Output formats. */
export const OUTPUT_FORMATS = ["table", "json", "yaml"] as const;

/** Where the CLI writes. */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  now(): number;
  /** Aborted on Ctrl-C (ends `watch`). */
  signal: AbortSignal;
}

/** Client command usage. */
export const CLIENT_USAGE = `Usage:
  pods-api list  [--socket PATH] [--fields a.b,c.d] [-o table|json|yaml]
  pods-api get UID [--socket PATH] [--fields a.b,c.d] [-o table|json|yaml]
  pods-api watch [--socket PATH] [--fields a.b,c.d] [-o table|json|yaml]`;

interface ClientFlags {
  socket: string;
  fields: string[];
  output: typeof OUTPUT_FORMATS[number];
  positionals: string[];
}

function parseClientFlags(args: readonly string[]): ClientFlags {
  const { values, positionals } = parseArgs({
    args: [...args],
    options: {
      socket: { type: "string", default: SERVE_FLAGS.socket.default },
      fields: { type: "string", default: "" },
      output: { type: "string", short: "o", default: "table" },
    },
    allowPositionals: true,
    strict: true,
  });
  const output = values.output as string;
  if (!(OUTPUT_FORMATS as readonly string[]).includes(output)) {
    throw new TypeError(`Cannot use output format "${output}": use table, json or yaml`);
  }
  const fields = (values.fields as string).split(",").map((f) => f.trim()).filter((f) => f !== "");
  return {
    socket: values.socket as string,
    fields,
    output: output as ClientFlags["output"],
    positionals,
  };
}

function render(pods: PodObject[], output: ClientFlags["output"], now: number): string {
  if (output === "json") {
    return JSON.stringify(pods.length === 1 ? pods[0] : { items: pods }, null, 2);
  }
  if (output === "yaml") return toYaml(pods.length === 1 ? pods[0] : { items: pods }).trimEnd();
  return alignColumns([POD_TABLE_HEADER, ...pods.map((p) => podRow(p, now))]).join("\n");
}

function watchLine(event: ClientWatchEvent, output: ClientFlags["output"], now: number): string {
  if (output === "json") return JSON.stringify(event);
  if (output === "yaml") return "---\n" + toYaml(event).trimEnd();
  if (event.pod === undefined) return event.type;
  return [
    event.type.padEnd(10),
    ...podRow(event.pod, now).map((c, i) => c.padEnd([16, 40, 6, 20, 9, 8, 16, 0][i]!)),
  ]
    .join(" ").trimEnd();
}

/**
 * Runs a client subcommand.
 *
 * @param command `list`, `get` or `watch`.
 * @param args The arguments after it.
 * @param io Output streams, clock and interrupt signal.
 * @returns The process exit code.
 */
export async function runClientCommand(
  command: "list" | "get" | "watch",
  args: readonly string[],
  io: CliIo,
): Promise<number> {
  const flags = parseClientFlags(args);
  using client = new PodsClient(flags.socket, { fields: flags.fields });
  if (command === "list") {
    const pods = await client.list();
    io.out(render(pods, flags.output, io.now()));
    return 0;
  }
  if (command === "get") {
    const [uid] = flags.positionals;
    if (uid === undefined) throw new TypeError("Missing UID: pods-api get UID");
    io.out(render([await client.get(uid)], flags.output, io.now()));
    return 0;
  }
  if (flags.output === "table") io.out(["EVENT".padEnd(10), ...POD_TABLE_HEADER].join(" "));
  for await (const event of client.watch(io.signal)) {
    io.out(watchLine(event, flags.output, io.now()));
  }
  return 0;
}
