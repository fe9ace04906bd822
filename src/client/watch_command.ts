/**
 * `pods-api watch`: the node's pods as they change, as kubectl's
 * `get --watch` prints them (with the time, the event and the fields that
 * changed) or one JSON or YAML event each, resuming and reconnecting through
 * a {@linkcode PodInformer}.
 *
 * @module
 */

import { stringify as toYaml } from "yaml";
import type { PodObject } from "../model/pod.ts";
import { type ParsedFlags, switchFlag, UsageError } from "./cli_flags.ts";
import { CLIENT_EXIT, type CliIo, describeError } from "./cli_io.ts";
import { PodsApiConnectError } from "./connect_error.ts";
import { changedPaths, changeSummary } from "./pod_changes.ts";
import { podCommandSetup, podSelection } from "./pod_command_setup.ts";
import { PodInformer } from "./pod_informer.ts";
import { podWithKind, withResourceVersion } from "./pod_output.ts";
import { padRow, podRow } from "./pod_table.ts";

function clockTime(ms: number): string {
  const d = new Date(ms);
  return [d.getHours(), d.getMinutes(), d.getSeconds()].map((n) => String(n).padStart(2, "0"))
    .join(":");
}

/** Runs `pods-api watch`: the exit code, or a UsageError for a name given, or a bad flag. */
export async function watchCommand(flags: ParsedFlags, io: CliIo): Promise<number> {
  if (flags.positionals.length > 0) {
    throw new UsageError(`unexpected argument "${flags.positionals[0]}": watch takes no names`);
  }
  const setup = podCommandSetup("watch", flags, io);
  using client = setup.client;
  const watchOnly = switchFlag(flags, "watch-only");
  const noHeaders = switchFlag(flags, "no-headers");
  const header = ["TIME", "EVENT", ...setup.columns.map((col) => col.header), "CHANGED"];
  const widths = header.map((h) => h.length);
  widths[0] = "hh:mm:ss".length;
  widths[1] = "MODIFIED".length;
  let synced = false;
  const pending: string[][] = [];

  const emit = (type: string, pod: PodObject, changed: string[] = []) => {
    // --watch-only still sizes the table by the initial list, so its rows line up with the header.
    if (!synced && watchOnly && setup.format.kind !== "table" && setup.format.kind !== "wide") {
      return;
    }
    const now = io.now();
    if (setup.format.kind === "json" || setup.format.kind === "yaml") {
      // The object's resourceVersion is the token to resume after this event, as on the HTTP API.
      const object = podWithKind(withResourceVersion(pod, informer.eventToken));
      const event: Record<string, unknown> = { type, object };
      if (type === "MODIFIED") event.changed = changed;
      // JSON: one event per line; YAML: one document per event.
      io.out(
        setup.format.kind === "json" ? JSON.stringify(event) : `---\n${toYaml(event).trimEnd()}`,
      );
      return;
    }
    if (setup.format.kind === "name") {
      io.out(`pod/${pod.metadata.name}`);
      return;
    }
    const row = [
      clockTime(now),
      type,
      ...podRow(pod, setup.columns, now, setup.mask),
      changeSummary(changed),
    ];
    if (!synced) {
      return void pending.push([`${pod.metadata.namespace}/${pod.metadata.name}`, ...row]);
    }
    row.forEach((cell, i) => widths[i] = Math.max(widths[i] ?? 0, cell.length));
    io.out(padRow(row, widths));
  };

  let failure: unknown;
  const stop = new AbortController();
  // Selected by the daemon (PodQuery) or by the informer itself (a kubelet's socket).
  const informer = new PodInformer(client, {
    selector: podSelection(flags, setup.namespace),
    onSync: (relist) => {
      if (relist) {
        io.err(
          `pods-api watch: reconnected; changes missed while away are shown as one event each`,
        );
        return;
      }
      synced = true;
      const sync: Record<string, string> = { type: "INITIAL_SYNC_COMPLETE" };
      if (informer.resumeToken !== "") sync.resourceVersion = informer.resumeToken;
      if (setup.format.kind === "json") io.out(JSON.stringify(sync));
      if (setup.format.kind === "yaml") io.out(`---\n${toYaml(sync).trimEnd()}`);
      if (setup.format.kind !== "table" && setup.format.kind !== "wide") return;
      // The initial list in namespace/name order, as list prints it.
      pending.sort((a, b) => a[0]! < b[0]! ? -1 : a[0]! > b[0]! ? 1 : 0);
      for (const row of pending) {
        row.shift();
        row.forEach((cell, i) => widths[i] = Math.max(widths[i] ?? 0, cell.length));
      }
      if (!noHeaders) io.out(padRow(header, widths));
      if (!watchOnly) { for (const row of pending) io.out(padRow(row, widths)); }
      pending.length = 0;
    },
    onResume: () => io.err("pods-api watch: reconnected; resumed where it left off"),
    onRetry: (retry) => {
      if (!informer.hasSynced() && retry.error instanceof PodsApiConnectError) {
        failure = retry.error;
        stop.abort();
        return;
      }
      io.err(
        `pods-api watch: ${describeError(retry.error)}; retrying in ${
          (retry.delayMs / 1000).toFixed(1)
        }s`,
      );
    },
  });
  const signal = AbortSignal.any([io.signal, stop.signal]);
  informer.addEventHandler({
    onAdd: (pod) => emit("ADDED", pod),
    onUpdate: (old, pod) => emit("MODIFIED", pod, changedPaths(old, pod)),
    onDelete: (pod) => emit("DELETED", pod),
  });
  await informer.run(signal);
  if (failure !== undefined) throw failure;
  return CLIENT_EXIT.ok;
}
