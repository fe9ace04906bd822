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
import { PodQueryClient, type QueryWatchEvent } from "./pod_query_client.ts";
import type { GetKeyMessage, SelectorMessage } from "../proto/mod.ts";
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
  pods-api list  [--socket PATH] [--fields a.b,c.d] [-o table|json|yaml] [SELECTION]
  pods-api get UID|NAMESPACE/NAME [--socket PATH] [--fields a.b,c.d] [-o table|json|yaml]
  pods-api get --container-id ID|--ip IP [--include-deleted] [...]
  pods-api watch [--socket PATH] [--fields a.b,c.d] [-o table|json|yaml] [SELECTION]
                 [--resume-token TOKEN] [--bookmark-seconds N]
  SELECTION: [-n NAMESPACE] [-l LABEL_SELECTOR] [--field-selector FIELD_SELECTOR]`;

interface ClientFlags {
  socket: string;
  fields: string[];
  output: typeof OUTPUT_FORMATS[number];
  positionals: string[];
  /** PodQuery selection; empty strings select everything. */
  selector: SelectorMessage;
  containerId: string;
  ip: string;
  includeDeleted: boolean;
  resumeToken: string;
  bookmarkSeconds: number;
}

function parseClientFlags(args: readonly string[]): ClientFlags {
  const { values, positionals } = parseArgs({
    args: [...args],
    options: {
      socket: { type: "string", default: SERVE_FLAGS.socket.default },
      fields: { type: "string", default: "" },
      output: { type: "string", short: "o", default: "table" },
      namespace: { type: "string", short: "n", default: "" },
      selector: { type: "string", short: "l", default: "" },
      "field-selector": { type: "string", default: "" },
      "container-id": { type: "string", default: "" },
      ip: { type: "string", default: "" },
      "include-deleted": { type: "boolean", default: false },
      "resume-token": { type: "string", default: "" },
      "bookmark-seconds": { type: "string", default: "0" },
    },
    allowPositionals: true,
    strict: true,
  });
  const output = values.output as string;
  if (!(OUTPUT_FORMATS as readonly string[]).includes(output)) {
    throw new TypeError(`Cannot use output format "${output}": use table, json or yaml`);
  }
  const fields = (values.fields as string).split(",").map((f) => f.trim()).filter((f) => f !== "");
  const bookmarkSeconds = Number(values["bookmark-seconds"]);
  if (!Number.isInteger(bookmarkSeconds) || bookmarkSeconds < 0) {
    throw new TypeError(`Cannot use --bookmark-seconds "${values["bookmark-seconds"]}"`);
  }
  return {
    socket: values.socket as string,
    fields,
    output: output as ClientFlags["output"],
    positionals,
    selector: {
      namespace: values.namespace as string,
      labelSelector: values.selector as string,
      fieldSelector: values["field-selector"] as string,
    },
    containerId: values["container-id"] as string,
    ip: values.ip as string,
    includeDeleted: values["include-deleted"] as boolean,
    resumeToken: values["resume-token"] as string,
    bookmarkSeconds,
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
  if (usesQuery(command, flags)) return await runQueryCommand(command, flags, io);
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

/** Whether a command needs `podsapi.v1.PodQuery` (selectors, lookups, resume). */
function usesQuery(command: "list" | "get" | "watch", flags: ClientFlags): boolean {
  const { namespace, labelSelector, fieldSelector } = flags.selector;
  if (namespace !== "" || labelSelector !== "" || fieldSelector !== "") return true;
  if (command === "get") {
    return flags.containerId !== "" || flags.ip !== "" || flags.includeDeleted ||
      (flags.positionals[0]?.includes("/") ?? false);
  }
  return command === "watch" && (flags.resumeToken !== "" || flags.bookmarkSeconds > 0);
}

function lookupKey(flags: ClientFlags): GetKeyMessage {
  if (flags.containerId !== "") return { kind: "containerId", id: flags.containerId };
  if (flags.ip !== "") return { kind: "podIp", ip: flags.ip };
  const [arg] = flags.positionals;
  if (arg === undefined) {
    throw new TypeError("Missing pod: pods-api get UID|NAMESPACE/NAME|--container-id ID|--ip IP");
  }
  const slash = arg.indexOf("/");
  if (slash < 0) return { kind: "uid", uid: arg };
  return { kind: "name", namespace: arg.slice(0, slash), name: arg.slice(slash + 1) };
}

async function runQueryCommand(
  command: "list" | "get" | "watch",
  flags: ClientFlags,
  io: CliIo,
): Promise<number> {
  using client = new PodQueryClient(flags.socket, { fields: flags.fields });
  if (command === "list") {
    const { pods } = await client.list(flags.selector);
    io.out(render(pods, flags.output, io.now()));
    return 0;
  }
  if (command === "get") {
    const { pod, deleted } = await client.get(lookupKey(flags), flags.includeDeleted);
    if (deleted && flags.output === "table") io.err("pods-api get: this pod was deleted");
    io.out(render([pod], flags.output, io.now()));
    return 0;
  }
  if (flags.output === "table") io.out(["EVENT".padEnd(10), ...POD_TABLE_HEADER].join(" "));
  const request = {
    selector: flags.selector,
    resumeToken: flags.resumeToken,
    bookmarkSeconds: flags.bookmarkSeconds,
  };
  for await (const event of client.watch(request, io.signal)) {
    io.out(queryWatchLine(event, flags.output, io.now()));
  }
  return 0;
}

function queryWatchLine(event: QueryWatchEvent, output: ClientFlags["output"], now: number) {
  if (output !== "table" || event.pod !== undefined) {
    return watchLine(event as ClientWatchEvent, output, now);
  }
  // INITIAL_SYNC_COMPLETE and BOOKMARK: the token to resume from is the news.
  return event.resumeToken === undefined ? event.type : `${event.type} ${event.resumeToken}`;
}
