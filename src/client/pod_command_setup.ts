/**
 * What the pod subcommands (`list`, `get`, `watch`, `ps`) share: the client
 * opened from their flags, the output and columns they ask for, the pods
 * they select, and how a rendering is printed.
 *
 * @module
 */

import { GrpcError, STATUS } from "../grpc/status.ts";
import type { PodObject } from "../model/pod.ts";
import { compileSelector, POD_SELECTABLE_FIELDS } from "../query/mod.ts";
import {
  type ClientCommand,
  COMMAND_SPECS,
  listFlag,
  type ParsedFlags,
  stringFlag,
  switchFlag,
  UsageError,
} from "./cli_flags.ts";
import type { CliIo } from "./cli_io.ts";
import { type OutputFormat, parseOutputFormat } from "./pod_output.ts";
import { PodQueryClient, type PodSelection } from "./pod_query_client.ts";
import { type PodColumn, podColumns } from "./pod_table.ts";
import { PodsClient } from "./pods_client.ts";
import { resolveSocket } from "./socket_path.ts";

/** The client and the output a pod subcommand's flags ask for. */
export interface PodCommandSetup {
  client: PodsClient;
  /** The field mask the user gave (`--fields`), empty for every field. */
  mask: string[];
  format: OutputFormat;
  columns: PodColumn[];
  /** `-n`, or `undefined` for every namespace. */
  namespace: string | undefined;
}

function splitFields(value: string | undefined): string[] {
  return (value ?? "").split(",").map((f) => f.trim()).filter((f) => f !== "");
}

/** Paths a client-side filter reads: they must come through the mask. */
function filterPaths(flags: ParsedFlags): string[] {
  const paths: string[] = [];
  if (stringFlag(flags, "selector")) paths.push("metadata.labels");
  for (const term of (stringFlag(flags, "field-selector") ?? "").split(",")) {
    const field = /^\s*([^=!\s]+)/.exec(term)?.[1];
    if (field !== undefined && (POD_SELECTABLE_FIELDS as readonly string[]).includes(field)) {
      paths.push(field);
    }
  }
  return paths;
}

/**
 * A client on the socket the flags, environment or config file name, fetching
 * `mask` (empty: all) plus what the filters read.
 */
export function openClient(flags: ParsedFlags, io: CliIo, mask: readonly string[]): PodsClient {
  const socket = resolveSocket({
    flag: stringFlag(flags, "socket"),
    configFile: stringFlag(flags, "config"),
    env: (n) => io.env(n),
  });
  const fields = mask.length === 0 ? [] : [...new Set([...mask, ...filterPaths(flags)])];
  return new PodsClient({ socket: socket.path, fields, userAgent: "pods-api-cli" });
}

/**
 * Reads the flags every pod subcommand shares and opens its client; a
 * UsageError for `-n` with `-A`, or an unknown `-o`.
 */
export function podCommandSetup(
  command: ClientCommand,
  flags: ParsedFlags,
  io: CliIo,
): PodCommandSetup {
  const namespace = stringFlag(flags, "namespace");
  if (switchFlag(flags, "all-namespaces") && namespace !== undefined) {
    throw new UsageError("flags -n and -A cannot be used together");
  }
  const format = parseOutputFormat(
    stringFlag(flags, "output") ?? "table",
    COMMAND_SPECS[command].outputs,
  );
  const mask = splitFields(stringFlag(flags, "fields"));
  const columns = podColumns({
    namespace: namespace === undefined,
    wide: format.kind === "wide",
    showLabels: switchFlag(flags, "show-labels"),
    labelColumns: listFlag(flags, "label-columns"),
  });
  return { client: openClient(flags, io, mask), mask, format, columns, namespace };
}

/** The selection `-n` (`namespace`), `-l` and `--field-selector` ask for. */
export function podSelection(flags: ParsedFlags, namespace: string | undefined): PodSelection {
  return {
    namespace: namespace ?? "",
    labelSelector: stringFlag(flags, "selector") ?? "",
    fieldSelector: stringFlag(flags, "field-selector") ?? "",
  };
}

/** Whether a call failed because the socket does not serve it (`UNIMPLEMENTED`). */
export function isUnimplemented(err: unknown): boolean {
  return err instanceof GrpcError && err.code === STATUS.UNIMPLEMENTED;
}

/**
 * The selected pods and the resume token: selected by the daemon (PodQuery),
 * or, on a socket that serves only the kubelet's Pods API, listed whole and
 * selected here (no token).
 */
export async function selectPods(
  client: PodsClient,
  selection: PodSelection,
  signal: AbortSignal,
): Promise<{ pods: PodObject[]; resumeToken: string }> {
  // Parsed here first: a bad selector is a usage error whatever the socket serves.
  const matcher = compileSelector(selection);
  try {
    return await new PodQueryClient(client).list(selection, { signal });
  } catch (err) {
    if (!isUnimplemented(err)) throw err;
  }
  const pods = (await client.listPods({ signal })).filter((p) => matcher.matches(p));
  return { pods, resumeToken: "" };
}

/** Prints a rendering: a JSONPath template's text exactly as kubectl does, no newline added. */
export function printRendering(io: CliIo, format: OutputFormat, text: string): void {
  if (format.kind === "jsonpath") io.write(text);
  else io.out(text);
}
