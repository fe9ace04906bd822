/**
 * `pods-api list` (and `get pods`): the node's pods, selected by the daemon
 * or, on a kubelet's socket, here, in kubectl's tables or as
 * `-o name|json|yaml|jsonpath`.
 *
 * @module
 */

import { type ParsedFlags, stringFlag, switchFlag, UsageError } from "./cli_flags.ts";
import { CLIENT_EXIT, type CliIo } from "./cli_io.ts";
import { devicesColumn } from "./devices_command.ts";
import { podCommandSetup, podSelection, printRendering, selectPods } from "./pod_command_setup.ts";
import { renderPods, sortPods } from "./pod_output.ts";

function noResources(io: CliIo, namespace: string | undefined): void {
  io.err(
    namespace === undefined
      ? "No resources found"
      : `No resources found in ${namespace} namespace.`,
  );
}

/** Runs `pods-api list`: the exit code, or a UsageError for a name given, or a bad flag. */
export async function listCommand(flags: ParsedFlags, io: CliIo): Promise<number> {
  if (flags.positionals.length > 0) {
    throw new UsageError(
      `unexpected argument "${
        flags.positionals[0]
      }": list takes no names (use pods-api get NS/NAME)`,
    );
  }
  const setup = podCommandSetup("list", flags, io);
  using client = setup.client;
  const sortBy = stringFlag(flags, "sort-by");
  sortPods([], sortBy); // a bad --sort-by is a usage error before any call
  const selected = await selectPods(client, podSelection(flags, setup.namespace), io.signal);
  const pods = sortPods(selected.pods, sortBy);
  if (pods.length === 0 && ["table", "wide", "name"].includes(setup.format.kind)) {
    noResources(io, setup.namespace);
    return CLIENT_EXIT.ok;
  }
  const devices = setup.format.kind === "wide" ? await devicesColumn(client, io.signal) : undefined;
  printRendering(
    io,
    setup.format,
    renderPods(pods, {
      format: setup.format,
      columns: devices === undefined ? setup.columns : [...setup.columns, devices],
      now: io.now(),
      mask: setup.mask,
      noHeaders: switchFlag(flags, "no-headers"),
      single: false,
      resumeToken: selected.resumeToken,
    }),
  );
  return CLIENT_EXIT.ok;
}
