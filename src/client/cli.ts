/**
 * The client subcommands of `pods-api`: `list` (and `get pods`), `get`,
 * `watch`, `ps`, `completion`, each with `--help`, kubectl's and crictl's
 * flags and output, and errors a person can act on. Exit codes: 0 done,
 * 1 the daemon could not answer (the message says why), 2 bad usage.
 *
 * @module
 */

import { stringify as toYaml } from "yaml";
import { GrpcError, STATUS } from "../grpc/status.ts";
import type { PodObject } from "../model/pod.ts";
import {
  type ClientCommand,
  COMMAND_SPECS,
  commandHelp,
  parseClientFlags,
  type ParsedFlags,
  UsageError,
} from "./cli_flags.ts";
import { bashCompletion, zshCompletion } from "./completion.ts";
import { devicesColumn, devicesCommand } from "./devices_command.ts";
import { whoisCommand } from "./whois_command.ts";
import { PodsApiConnectError } from "./connect_error.ts";
import { PodInformer } from "./pod_informer.ts";
import { lookUpPod, splitName } from "./pod_lookup.ts";
import { changedPaths, changeSummary } from "./pod_changes.ts";
import {
  bareContainerId,
  compileSelector,
  MIN_CONTAINER_ID_PREFIX,
  POD_SELECTABLE_FIELDS,
  SelectorError,
} from "../query/mod.ts";
import { type PodKey, PodQueryClient, type PodSelection } from "./pod_query_client.ts";
import {
  type OutputFormat,
  parseOutputFormat,
  podWithKind,
  renderPods,
  sortPods,
  withResourceVersion,
} from "./pod_output.ts";
import { padRow, type PodColumn, podColumns, podRow } from "./pod_table.ts";
import { PodsClient, RateLimitedError } from "./pods_client.ts";
import { containerRows, PS_HEADER, psCells } from "./ps_table.ts";
import { resolveSocket } from "./socket_path.ts";

/** Where the CLI writes and what it reads from its surroundings. */
export interface CliIo {
  /** Writes a line (the newline is added). */
  out(text: string): void;
  /** Writes text as it is, for output that ends where the user's template ends (`-o jsonpath`). */
  write(text: string): void;
  err(text: string): void;
  /** Current time, ms since the epoch. */
  now(): number;
  /** Aborted on Ctrl-C (ends `watch`). */
  signal: AbortSignal;
  /** Reads an environment variable (`PODS_API_SOCKET`). */
  env(name: string): string | undefined;
}

/** Exit codes of the client subcommands. */
export const CLIENT_EXIT = { ok: 0, failure: 1, usage: 2 } as const;

/** Usage lines of the client subcommands, for the top-level help. */
export const CLIENT_USAGE = `Client commands (each takes --help):
  pods-api list   [-n NS|-A] [-l SEL] [--field-selector SEL] [-o table|wide|name|json|yaml|jsonpath=T]
  pods-api get    UID | NS/NAME | -n NS NAME | --container-id ID | --ip IP  [-o ...]
  pods-api watch  [-n NS|-A] [-l SEL] [--watch-only] [-o table|wide|name|json|yaml]
  pods-api ps     [-a] [--pod POD] [--name RE] [--state S] [-q]
  pods-api devices [DEVICE] [-n NS|-A] [--resource NAME] [--node] [-o table|wide|json|yaml]
  pods-api whois PID | --cgroup-id N | --cgroup PATH | --mntns N [-o table|json|yaml]
  pods-api completion bash|zsh`;

const UID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Runs a client subcommand and reports any failure as one line on stderr.
 *
 * @param command `list`, `get`, `watch`, `ps` or `completion`.
 * @param args The arguments after it.
 * @param io Output, clock, interrupt and environment.
 * @returns The exit code.
 */
export async function runClientCommand(
  command: ClientCommand,
  args: readonly string[],
  io: CliIo,
): Promise<number> {
  const dashDash = args.indexOf("--");
  const flagArgs = dashDash < 0 ? args : args.slice(0, dashDash);
  let name = command;
  let rest = args;
  if (command === "get" && ["pods", "pod", "po"].includes(args[0] ?? "")) rest = args.slice(1);
  if (command === "get" && args[0] === "pods" && !hasLookup(rest)) name = "list";
  if (flagArgs.includes("--help") || flagArgs.includes("-h")) {
    io.out(commandHelp(name));
    return CLIENT_EXIT.ok;
  }
  try {
    const flags = parseClientFlags(name, rest);
    switch (name) {
      case "list":
        return await listCommand(flags, io);
      case "get":
        return await getCommand(flags, io);
      case "watch":
        return await watchCommand(flags, io);
      case "ps":
        return await psCommand(flags, io);
      case "devices": {
        using client = openClient(flags, io, []);
        return await devicesCommand(flags, io, client);
      }
      case "whois": {
        using client = openClient(flags, io, []);
        return await whoisCommand(flags, io, client);
      }
      case "completion":
        return completionCommand(flags, io);
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (err) {
    const usage = err instanceof UsageError || err instanceof SelectorError;
    io.err(`pods-api ${name}: ${describeError(err)}`);
    return usage ? CLIENT_EXIT.usage : CLIENT_EXIT.failure;
  }
}

function hasLookup(args: readonly string[]): boolean {
  try {
    const { values, positionals } = parseClientFlags("get", args);
    return positionals.length > 0 || values["container-id"] !== undefined ||
      values["ip"] !== undefined;
  } catch {
    return false;
  }
}

/**
 * One line a person can act on, for any error a client command meets.
 *
 * @param err The error.
 * @returns The message.
 */
export function describeError(err: unknown): string {
  if (err instanceof RateLimitedError) {
    return `Rate limited by the daemon: still refused after ${err.attempts} attempts with backoff (${err.message}); too many List/Get calls reach this node: try again, or raise the daemon's --rate-limit-qps and --rate-limit-burst`;
  }
  if (err instanceof GrpcError) {
    switch (err.code) {
      case STATUS.FAILED_PRECONDITION:
        return `The daemon is still syncing (${err.message}): it answers once its first read of every pod source is done; try again in a few seconds`;
      case STATUS.NOT_FOUND:
        return `Not found: ${err.message}`;
      case STATUS.INVALID_ARGUMENT:
        return `The daemon refused the request: ${err.message}`;
      case STATUS.UNAVAILABLE:
        return `Lost the daemon (${err.message}): it may be restarting; try again`;
      case STATUS.DEADLINE_EXCEEDED:
        return `The daemon did not answer in time (${err.message})`;
      case STATUS.UNIMPLEMENTED:
        return `The server does not offer this call (${err.message}): is --socket a pods-api or kubelet Pods API socket?`;
      default:
        return err.message;
    }
  }
  if (err instanceof PodsApiConnectError) return err.message;
  if (err instanceof Deno.errors.NotCapable) {
    return `Not permitted: ${err.message.replace(/, run again with.*$/s, "")}`;
  }
  return (err as Error).message ?? String(err);
}

interface Common {
  client: PodsClient;
  mask: string[];
  format: OutputFormat;
  columns: PodColumn[];
  namespace: string | undefined;
}

function str(flags: ParsedFlags, name: string): string | undefined {
  const v = flags.values[name];
  return typeof v === "string" ? v : undefined;
}

function bool(flags: ParsedFlags, name: string): boolean {
  return flags.values[name] === true;
}

function list(flags: ParsedFlags, name: string): string[] {
  const v = flags.values[name];
  return Array.isArray(v) ? v : [];
}

function splitFields(value: string | undefined): string[] {
  return (value ?? "").split(",").map((f) => f.trim()).filter((f) => f !== "");
}

/** Paths a client-side filter reads: they must come through the mask. */
function filterPaths(flags: ParsedFlags): string[] {
  const paths: string[] = [];
  if (str(flags, "selector")) paths.push("metadata.labels");
  for (const term of (str(flags, "field-selector") ?? "").split(",")) {
    const field = /^\s*([^=!\s]+)/.exec(term)?.[1];
    if (field !== undefined && (POD_SELECTABLE_FIELDS as readonly string[]).includes(field)) {
      paths.push(field);
    }
  }
  return paths;
}

function openClient(flags: ParsedFlags, io: CliIo, mask: readonly string[]): PodsClient {
  const socket = resolveSocket({
    flag: str(flags, "socket"),
    configFile: str(flags, "config"),
    env: (n) => io.env(n),
  });
  const fields = mask.length === 0 ? [] : [...new Set([...mask, ...filterPaths(flags)])];
  return new PodsClient({ socket: socket.path, fields, userAgent: "pods-api-cli" });
}

function common(command: ClientCommand, flags: ParsedFlags, io: CliIo): Common {
  if (bool(flags, "all-namespaces") && str(flags, "namespace") !== undefined) {
    throw new UsageError("flags -n and -A cannot be used together");
  }
  const format = parseOutputFormat(str(flags, "output") ?? "table", COMMAND_SPECS[command].outputs);
  const namespace = str(flags, "namespace");
  const mask = splitFields(str(flags, "fields"));
  const columns = podColumns({
    namespace: namespace === undefined,
    wide: format.kind === "wide",
    showLabels: bool(flags, "show-labels"),
    labelColumns: list(flags, "label-columns"),
  });
  return { client: openClient(flags, io, mask), mask, format, columns, namespace };
}

function selection(flags: ParsedFlags, namespace: string | undefined): PodSelection {
  return {
    namespace: namespace ?? "",
    labelSelector: str(flags, "selector") ?? "",
    fieldSelector: str(flags, "field-selector") ?? "",
  };
}

function isUnimplemented(err: unknown): boolean {
  return err instanceof GrpcError && err.code === STATUS.UNIMPLEMENTED;
}

/**
 * The selected pods and the resume token: selected by the daemon (PodQuery),
 * or, on a socket that serves only the kubelet's Pods API, listed whole and
 * selected here (no token).
 */
async function selectPods(
  client: PodsClient,
  sel: PodSelection,
  signal: AbortSignal,
): Promise<{ pods: PodObject[]; resumeToken: string }> {
  // Parsed here first: a bad selector is a usage error whatever the socket serves.
  const matcher = compileSelector(sel);
  try {
    return await new PodQueryClient(client).list(sel, { signal });
  } catch (err) {
    if (!isUnimplemented(err)) throw err;
  }
  const pods = (await client.listPods({ signal })).filter((p) => matcher.matches(p));
  return { pods, resumeToken: "" };
}

/** Prints a rendering: a JSONPath template's text exactly as kubectl does, no newline added. */
function print(io: CliIo, format: OutputFormat, text: string): void {
  if (format.kind === "jsonpath") io.write(text);
  else io.out(text);
}

function noResources(io: CliIo, namespace: string | undefined): void {
  io.err(
    namespace === undefined
      ? "No resources found"
      : `No resources found in ${namespace} namespace.`,
  );
}

async function listCommand(flags: ParsedFlags, io: CliIo): Promise<number> {
  if (flags.positionals.length > 0) {
    throw new UsageError(
      `unexpected argument "${
        flags.positionals[0]
      }": list takes no names (use pods-api get NS/NAME)`,
    );
  }
  const c = common("list", flags, io);
  using client = c.client;
  const sortBy = str(flags, "sort-by");
  sortPods([], sortBy); // a bad --sort-by is a usage error before any call
  const selected = await selectPods(client, selection(flags, c.namespace), io.signal);
  const pods = sortPods(selected.pods, sortBy);
  if (pods.length === 0 && ["table", "wide", "name"].includes(c.format.kind)) {
    noResources(io, c.namespace);
    return CLIENT_EXIT.ok;
  }
  const devices = c.format.kind === "wide" ? await devicesColumn(client, io.signal) : undefined;
  print(
    io,
    c.format,
    renderPods(pods, {
      format: c.format,
      columns: devices === undefined ? c.columns : [...c.columns, devices],
      now: io.now(),
      mask: c.mask,
      noHeaders: bool(flags, "no-headers"),
      single: false,
      resumeToken: selected.resumeToken,
    }),
  );
  return CLIENT_EXIT.ok;
}

/** The pod a `get` names by flags, among pods listed from a kubelet-shaped service. */
function lookUp(pods: readonly PodObject[], flags: ParsedFlags): PodObject {
  const containerId = str(flags, "container-id");
  const ip = str(flags, "ip");
  const namespace = str(flags, "namespace");
  const [key] = flags.positionals;
  return lookUpPod(pods, {
    ...(containerId === undefined ? {} : { containerId }),
    ...(ip === undefined ? {} : { ip }),
    ...(namespace === undefined ? {} : { namespace }),
    ...(key === undefined ? {} : { key }),
  });
}

async function getCommand(flags: ParsedFlags, io: CliIo): Promise<number> {
  const keys = [
    flags.positionals.length > 0,
    str(flags, "container-id") !== undefined,
    str(flags, "ip") !== undefined,
  ].filter(Boolean).length;
  if (keys === 0) {
    throw new UsageError("name a pod: UID, NS/NAME, -n NS NAME, --container-id ID or --ip IP");
  }
  if (keys > 1 || flags.positionals.length > 1) {
    throw new UsageError("name one pod: one of UID, NS/NAME, --container-id, --ip");
  }
  const c = common("get", flags, io);
  using client = c.client;
  const deleted = bool(flags, "deleted");
  const containerId = str(flags, "container-id");
  const ip = str(flags, "ip");
  const namespace = str(flags, "namespace");
  const [key] = flags.positionals;
  if (containerId !== undefined && bareContainerId(containerId).length < MIN_CONTAINER_ID_PREFIX) {
    throw new UsageError(
      `flag --container-id: "${containerId}" is too short; give the full ID or at least ${MIN_CONTAINER_ID_PREFIX} characters`,
    );
  }
  let lookup: PodKey | undefined;
  let byUid = false;
  if (containerId !== undefined) lookup = { kind: "containerId", id: containerId };
  else if (ip !== undefined) lookup = { kind: "podIp", ip };
  else if (UID_PATTERN.test(key!)) {
    byUid = true;
    lookup = { kind: "uid", uid: key! };
  } else if (key!.includes("/") || namespace !== undefined) {
    const [ns, name] = splitName(key!, namespace);
    lookup = { kind: "name", namespace: ns, name };
  } else if (deleted) {
    // A UID in another spelling (a static pod's is a hash): tombstones are kept by UID.
    lookup = { kind: "uid", uid: key! };
  }
  let pod: PodObject;
  let tombstone = false;
  if (lookup !== undefined) {
    try {
      const found = await new PodQueryClient(client).get(lookup, {
        signal: io.signal,
        includeDeleted: deleted,
      });
      pod = withResourceVersion(found.pod, found.resumeToken);
      tombstone = found.deleted;
    } catch (err) {
      if (!isUnimplemented(err)) throw err;
      if (byUid && !deleted) {
        // The kubelet's own call: any Pods API socket answers it.
        pod = await client.getPod(key!, { signal: io.signal });
      } else if (deleted) {
        throw new GrpcError(
          STATUS.UNIMPLEMENTED,
          "--deleted needs a pods-api daemon; this socket serves only the kubelet's Pods API (no podsapi.v1.PodQuery), which keeps no deleted pods",
        );
      } else {
        pod = lookUp(await client.listPods({ signal: io.signal }), flags);
      }
    }
  } else {
    try {
      // A UID in another spelling (a static pod's is a hash), else a name in any namespace.
      pod = await client.getPod(key!, { signal: io.signal });
    } catch (err) {
      const miss = err instanceof GrpcError &&
        (err.code === STATUS.NOT_FOUND || err.code === STATUS.INVALID_ARGUMENT);
      if (!miss) throw err;
      pod = lookUp(await client.listPods({ signal: io.signal }), flags);
    }
  }
  if (tombstone) {
    const at = pod.metadata.deletionTimestamp;
    io.err(
      `pods-api get: pod ${pod.metadata.namespace}/${pod.metadata.name} was deleted${
        at === undefined ? "" : ` at ${at}`
      }; this is its last state`,
    );
  }
  const columns = podColumns({
    namespace: str(flags, "namespace") === undefined,
    wide: c.format.kind === "wide",
    showLabels: bool(flags, "show-labels"),
    labelColumns: list(flags, "label-columns"),
  });
  print(
    io,
    c.format,
    renderPods([pod], {
      format: c.format,
      columns,
      now: io.now(),
      mask: c.mask,
      noHeaders: bool(flags, "no-headers"),
      single: true,
    }),
  );
  return CLIENT_EXIT.ok;
}

function clockTime(ms: number): string {
  const d = new Date(ms);
  return [d.getHours(), d.getMinutes(), d.getSeconds()].map((n) => String(n).padStart(2, "0"))
    .join(":");
}

async function watchCommand(flags: ParsedFlags, io: CliIo): Promise<number> {
  if (flags.positionals.length > 0) {
    throw new UsageError(`unexpected argument "${flags.positionals[0]}": watch takes no names`);
  }
  const c = common("watch", flags, io);
  using client = c.client;
  const watchOnly = bool(flags, "watch-only");
  const noHeaders = bool(flags, "no-headers");
  const header = ["TIME", "EVENT", ...c.columns.map((col) => col.header), "CHANGED"];
  const widths = header.map((h) => h.length);
  widths[0] = "hh:mm:ss".length;
  widths[1] = "MODIFIED".length;
  let synced = false;
  const pending: string[][] = [];

  const emit = (type: string, pod: PodObject, changed: string[] = []) => {
    // --watch-only still sizes the table by the initial list, so its rows line up with the header.
    if (!synced && watchOnly && c.format.kind !== "table" && c.format.kind !== "wide") return;
    const now = io.now();
    if (c.format.kind === "json" || c.format.kind === "yaml") {
      // The object's resourceVersion is the token to resume after this event, as on the HTTP API.
      const object = podWithKind(withResourceVersion(pod, informer.eventToken));
      const event: Record<string, unknown> = { type, object };
      if (type === "MODIFIED") event.changed = changed;
      // JSON: one event per line; YAML: one document per event.
      io.out(c.format.kind === "json" ? JSON.stringify(event) : `---\n${toYaml(event).trimEnd()}`);
      return;
    }
    if (c.format.kind === "name") {
      io.out(`pod/${pod.metadata.name}`);
      return;
    }
    const row = [
      clockTime(now),
      type,
      ...podRow(pod, c.columns, now, c.mask),
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
    selector: selection(flags, c.namespace),
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
      if (c.format.kind === "json") io.out(JSON.stringify(sync));
      if (c.format.kind === "yaml") io.out(`---\n${toYaml(sync).trimEnd()}`);
      if (c.format.kind !== "table" && c.format.kind !== "wide") return;
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

const PS_STATES: Readonly<Record<string, string>> = {
  running: "Running",
  exited: "Exited",
  created: "Created",
  unknown: "Unknown",
};

async function psCommand(flags: ParsedFlags, io: CliIo): Promise<number> {
  if (flags.positionals.length > 0) {
    throw new UsageError(`unexpected argument "${flags.positionals[0]}": use --pod or --name`);
  }
  const output = str(flags, "output") ?? "table";
  if (output !== "table" && output !== "json") {
    throw new UsageError(`unknown output format "${output}" for -o: use table, json`);
  }
  const stateFlag = str(flags, "state");
  const state = stateFlag === undefined ? undefined : PS_STATES[stateFlag.toLowerCase()];
  if (stateFlag !== undefined && state === undefined) {
    throw new UsageError(
      `flag --state: unknown state "${stateFlag}": use running, exited, created or unknown`,
    );
  }
  let nameRe: RegExp | undefined;
  try {
    nameRe = str(flags, "name") === undefined ? undefined : new RegExp(str(flags, "name")!);
  } catch {
    throw new UsageError(`flag --name: "${str(flags, "name")}" is not a regular expression`);
  }
  using client = openClient(flags, io, []);
  const podKey = str(flags, "pod");
  const sel = {
    namespace: str(flags, "namespace") ?? "",
    labelSelector: str(flags, "selector") ?? "",
  };
  const pods = sortPods((await selectPods(client, sel, io.signal)).pods).filter((p) =>
    podKey === undefined || p.metadata.uid.startsWith(podKey) || p.metadata.name === podKey ||
    `${p.metadata.namespace}/${p.metadata.name}` === podKey
  );
  const rows = containerRows(pods).filter((r) =>
    (state !== undefined ? r.state === state : bool(flags, "all") || r.state === "Running") &&
    (nameRe === undefined || nameRe.test(r.name))
  );
  if (bool(flags, "quiet")) {
    if (rows.length > 0) io.out(rows.map((r) => r.id).filter((id) => id !== "").join("\n"));
    return CLIENT_EXIT.ok;
  }
  if (output === "json") {
    io.out(JSON.stringify({ containers: rows }, null, 2));
    return CLIENT_EXIT.ok;
  }
  const now = io.now();
  const table = rows.map((r) => psCells(r, now));
  const all = bool(flags, "no-headers") ? table : [PS_HEADER, ...table];
  const widths: number[] = [];
  for (const row of all) {
    row.forEach((cell, i) => widths[i] = Math.max(widths[i] ?? 0, cell.length));
  }
  if (all.length > 0) io.out(all.map((r) => padRow(r, widths)).join("\n"));
  return CLIENT_EXIT.ok;
}

function completionCommand(flags: ParsedFlags, io: CliIo): number {
  const [shell, ...more] = flags.positionals;
  if (shell === undefined || more.length > 0 || (shell !== "bash" && shell !== "zsh")) {
    throw new UsageError(`name one shell: pods-api completion bash|zsh`);
  }
  io.out(shell === "bash" ? bashCompletion() : zshCompletion());
  return CLIENT_EXIT.ok;
}
