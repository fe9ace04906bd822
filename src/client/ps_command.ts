/**
 * `pods-api ps`: the containers of the node's pods, as crictl's `ps` lists
 * them, filtered by pod, name and state.
 *
 * @module
 */

import { outputFlag, type ParsedFlags, stringFlag, switchFlag, UsageError } from "./cli_flags.ts";
import { CLIENT_EXIT, type CliIo } from "./cli_io.ts";
import { openClient, selectPods } from "./pod_command_setup.ts";
import { sortPods } from "./pod_output.ts";
import { padRow } from "./pod_table.ts";
import { containerRows, PS_HEADER, psCells } from "./ps_table.ts";

const PS_STATES: Readonly<Record<string, string>> = {
  running: "Running",
  exited: "Exited",
  created: "Created",
  unknown: "Unknown",
};

/** Runs `pods-api ps`: the exit code, or a UsageError for a bad flag. */
export async function psCommand(flags: ParsedFlags, io: CliIo): Promise<number> {
  if (flags.positionals.length > 0) {
    throw new UsageError(`unexpected argument "${flags.positionals[0]}": use --pod or --name`);
  }
  const output = outputFlag(flags, ["table", "json"]);
  const stateFlag = stringFlag(flags, "state");
  const state = stateFlag === undefined ? undefined : PS_STATES[stateFlag.toLowerCase()];
  if (stateFlag !== undefined && state === undefined) {
    throw new UsageError(
      `flag --state: unknown state "${stateFlag}": use running, exited, created or unknown`,
    );
  }
  let nameRe: RegExp | undefined;
  try {
    nameRe = stringFlag(flags, "name") === undefined
      ? undefined
      : new RegExp(stringFlag(flags, "name")!);
  } catch {
    throw new UsageError(`flag --name: "${stringFlag(flags, "name")}" is not a regular expression`);
  }
  using client = openClient(flags, io, []);
  const podKey = stringFlag(flags, "pod");
  const sel = {
    namespace: stringFlag(flags, "namespace") ?? "",
    labelSelector: stringFlag(flags, "selector") ?? "",
  };
  const pods = sortPods((await selectPods(client, sel, io.signal)).pods).filter((p) =>
    podKey === undefined || p.metadata.uid.startsWith(podKey) || p.metadata.name === podKey ||
    `${p.metadata.namespace}/${p.metadata.name}` === podKey
  );
  const rows = containerRows(pods).filter((r) =>
    (state !== undefined ? r.state === state : switchFlag(flags, "all") || r.state === "Running") &&
    (nameRe === undefined || nameRe.test(r.name))
  );
  if (switchFlag(flags, "quiet")) {
    if (rows.length > 0) io.out(rows.map((r) => r.id).filter((id) => id !== "").join("\n"));
    return CLIENT_EXIT.ok;
  }
  if (output === "json") {
    io.out(JSON.stringify({ containers: rows }, null, 2));
    return CLIENT_EXIT.ok;
  }
  const now = io.now();
  const table = rows.map((r) => psCells(r, now));
  const all = switchFlag(flags, "no-headers") ? table : [PS_HEADER, ...table];
  const widths: number[] = [];
  for (const row of all) {
    row.forEach((cell, i) => widths[i] = Math.max(widths[i] ?? 0, cell.length));
  }
  if (all.length > 0) io.out(all.map((r) => padRow(r, widths)).join("\n"));
  return CLIENT_EXIT.ok;
}
