/**
 * The flags of every client subcommand, in one table that drives parsing,
 * `--help` and shell completion. Parsing is `node:util`'s `parseArgs`; its
 * errors become one line that names the flag.
 *
 * @module
 */

import { parseArgs } from "node:util";

/** One flag of a client subcommand. */
export interface ClientFlagSpec {
  readonly type: "string" | "boolean";
  readonly short?: string;
  /** May be given more than once (values also split on commas). */
  readonly multiple?: boolean;
  /** Placeholder of the value in help. */
  readonly value?: string;
  readonly help: string;
}

const SOCKET: ClientFlagSpec = {
  type: "string",
  value: "PATH",
  help:
    "Daemon socket (else $PODS_API_SOCKET, else socket: in the config file, else /run/pods-api/pods-api.sock if there, else the kubelet's /var/lib/kubelet/pods-api/pods-api.sock)",
};
const CONFIG: ClientFlagSpec = {
  type: "string",
  value: "PATH",
  help: "Config file to read socket: from (default /etc/pods-api/config.yaml, if present)",
};
const HELP: ClientFlagSpec = { type: "boolean", short: "h", help: "Show this help" };
const NAMESPACE: ClientFlagSpec = {
  type: "string",
  short: "n",
  value: "NS",
  help: "Only pods of this namespace (the NAMESPACE column is then left out)",
};
const ALL_NAMESPACES: ClientFlagSpec = {
  type: "boolean",
  short: "A",
  help: "Pods of every namespace (the default on a node)",
};
const SELECTOR: ClientFlagSpec = {
  type: "string",
  short: "l",
  value: "SELECTOR",
  help: "Label selector: a=b, a!=b, a in (x,y), a notin (x), a, !a; comma = and",
};
const FIELD_SELECTOR: ClientFlagSpec = {
  type: "string",
  value: "SELECTOR",
  help: "Field selector, e.g. status.phase=Running,spec.restartPolicy!=Always",
};
const FIELDS: ClientFlagSpec = {
  type: "string",
  value: "a.b,c.d",
  help: "Field mask: fetch only these fields (columns it removes show -)",
};
const NO_HEADERS: ClientFlagSpec = { type: "boolean", help: "Print no header line" };
const SHOW_LABELS: ClientFlagSpec = { type: "boolean", help: "Add a LABELS column" };
const LABEL_COLUMNS: ClientFlagSpec = {
  type: "string",
  short: "L",
  multiple: true,
  value: "KEY",
  help: "Add a column with this label's value (repeat or comma-separate)",
};

/** The client subcommands. */
export const CLIENT_COMMANDS = [
  "list",
  "get",
  "watch",
  "ps",
  "devices",
  "whois",
  "completion",
  "version",
] as const;

/** One client subcommand. */
export type ClientCommand = typeof CLIENT_COMMANDS[number];

/** A subcommand's usage line, summary and flags. */
export interface CommandSpec {
  readonly usage: string;
  readonly summary: string;
  readonly outputs: readonly string[];
  readonly flags: Readonly<Record<string, ClientFlagSpec>>;
  readonly examples: readonly string[];
}

/** Every client subcommand's flags. */
export const COMMAND_SPECS: Readonly<Record<ClientCommand, CommandSpec>> = {
  list: {
    usage: "pods-api list [flags]   (also: pods-api get pods [flags])",
    summary: "List the node's pods, sorted by namespace and name, as kubectl get pods does.",
    outputs: ["table", "wide", "name", "json", "yaml", "jsonpath=TEMPLATE"],
    flags: {
      "namespace": NAMESPACE,
      "all-namespaces": ALL_NAMESPACES,
      "selector": SELECTOR,
      "field-selector": FIELD_SELECTOR,
      "output": {
        type: "string",
        short: "o",
        value: "FORMAT",
        help: "table, wide, name, json, yaml or jsonpath=TEMPLATE (json and yaml print a v1 List)",
      },
      "no-headers": NO_HEADERS,
      "show-labels": SHOW_LABELS,
      "label-columns": LABEL_COLUMNS,
      "sort-by": {
        type: "string",
        value: "JSONPATH",
        help: "Sort by this field, e.g. .metadata.creationTimestamp or {.status.podIP}",
      },
      "fields": FIELDS,
      "socket": SOCKET,
      "config": CONFIG,
      "help": HELP,
    },
    examples: [
      "pods-api list -n kube-system -o wide",
      "pods-api list -l app=web --field-selector status.phase=Running",
      "pods-api list -o jsonpath='{range .items[*]}{.metadata.name}{\"\\n\"}{end}'",
    ],
  },
  get: {
    usage: "pods-api get (UID | NS/NAME | -n NS NAME | --container-id ID | --ip IP) [flags]",
    summary:
      "Show one pod: by UID, by namespace and name, by one of its containers' IDs or by its IP.",
    outputs: ["table", "wide", "name", "json", "yaml", "jsonpath=TEMPLATE"],
    flags: {
      "namespace": { ...NAMESPACE, help: "Namespace of NAME" },
      "container-id": {
        type: "string",
        value: "ID",
        help: "The pod running this container (containerd://ID, ID, or a unique prefix of 12+)",
      },
      "ip": { type: "string", value: "IP", help: "The pod with this IP (v4 or v6)" },
      "deleted": {
        type: "boolean",
        help: "Also find a pod deleted a short while ago (its tombstone; needs PodQuery)",
      },
      "output": {
        type: "string",
        short: "o",
        value: "FORMAT",
        help: "table, wide, name, json, yaml or jsonpath=TEMPLATE (json and yaml print one Pod)",
      },
      "no-headers": NO_HEADERS,
      "show-labels": SHOW_LABELS,
      "label-columns": LABEL_COLUMNS,
      "fields": FIELDS,
      "socket": SOCKET,
      "config": CONFIG,
      "help": HELP,
    },
    examples: [
      "pods-api get payments/api-7d9f8-x2x9q -o yaml",
      "pods-api get -n payments api-7d9f8-x2x9q",
      "pods-api get --container-id 3f2a9c1b7e44",
      "pods-api get --ip 10.244.1.17",
    ],
  },
  watch: {
    usage: "pods-api watch [flags]",
    summary:
      "Print the node's pods, then every change (TIME, EVENT, the pod's columns and what CHANGED); reconnects by itself.",
    outputs: ["table", "wide", "name", "json", "yaml"],
    flags: {
      "namespace": NAMESPACE,
      "all-namespaces": ALL_NAMESPACES,
      "selector": SELECTOR,
      "field-selector": FIELD_SELECTOR,
      "output": {
        type: "string",
        short: "o",
        value: "FORMAT",
        help:
          'table, wide, name, json (one {"type","object","changed"} event per line) or yaml (one document per event)',
      },
      "watch-only": {
        type: "boolean",
        help: "Leave out the pods that exist when the watch starts",
      },
      "no-headers": NO_HEADERS,
      "show-labels": SHOW_LABELS,
      "label-columns": LABEL_COLUMNS,
      "fields": FIELDS,
      "socket": SOCKET,
      "config": CONFIG,
      "help": HELP,
    },
    examples: [
      "pods-api watch -n payments",
      "pods-api watch --fields status.phase --watch-only",
      "pods-api watch -o json | jq -c 'select(.type==\"DELETED\") | .object.metadata.name'",
    ],
  },
  ps: {
    usage: "pods-api ps [flags]",
    summary: "List the containers of the node's pods, as crictl ps does (running ones unless -a).",
    outputs: ["table", "json"],
    flags: {
      "all": { type: "boolean", short: "a", help: "Show containers in every state" },
      "pod": {
        type: "string",
        short: "p",
        value: "POD",
        help: "Only this pod's containers (a pod UID or its prefix, a name or NS/NAME)",
      },
      "name": { type: "string", value: "REGEX", help: "Only containers whose name matches" },
      "state": {
        type: "string",
        value: "STATE",
        help: "Only containers in this state: running, exited, created (waiting) or unknown",
      },
      "quiet": { type: "boolean", short: "q", help: "Print only container IDs" },
      "namespace": NAMESPACE,
      "selector": { ...SELECTOR, help: "Only containers of pods with these labels" },
      "output": { type: "string", short: "o", value: "FORMAT", help: "table or json" },
      "no-headers": NO_HEADERS,
      "socket": SOCKET,
      "config": CONFIG,
      "help": HELP,
    },
    examples: [
      "pods-api ps",
      "pods-api ps -a --state exited",
      "pods-api ps --pod payments/api-0 -q",
    ],
  },
  devices: {
    usage: "pods-api devices [DEVICE] [flags]",
    summary:
      "What the node's pods hold (devices, exclusive CPUs, memory, DRA devices: the kubelet's podresources API, joined onto pods by the daemon): one row per device with its pod, container and NUMA node; with DEVICE, which pod and container holds it; with --node, every device of the node, allocated or free.",
    outputs: ["table", "wide", "json", "yaml"],
    flags: {
      "namespace": { ...NAMESPACE, help: "Only pods of this namespace" },
      "all-namespaces": ALL_NAMESPACES,
      "selector": { ...SELECTOR, help: "Only pods with these labels" },
      "resource": {
        type: "string",
        value: "NAME",
        help:
          "Only this resource: a device plugin resource (nvidia.com/gpu), a DRA driver, cpu, or a memory type (hugepages-1Gi)",
      },
      "node": {
        type: "boolean",
        help: "The node's devices (allocatable, and in use) with their state: allocated or free",
      },
      "output": {
        type: "string",
        short: "o",
        value: "FORMAT",
        help: "table, wide (adds CLAIM, CDI, POD UID / ALLOCATABLE), json or yaml",
      },
      "no-headers": NO_HEADERS,
      "socket": SOCKET,
      "config": CONFIG,
      "help": HELP,
    },
    examples: [
      "pods-api devices --resource nvidia.com/gpu -n ml",
      "pods-api devices GPU-8f2c1b7e-4a1d-9c3e-5b6f-0a1b2c3d4e5f",
      "pods-api devices --node --resource nvidia.com/gpu",
      "pods-api devices -o json | jq '.items[].containers[].devices'",
    ],
  },
  whois: {
    usage: "pods-api whois (PID | --cgroup-id N | --cgroup PATH | --mntns N) [flags]",
    summary:
      "Which pod and container a process is in: by host PID (any process of the container), cgroup v2 ID (eBPF's cgroup ID), cgroup path or mount namespace inode.",
    outputs: ["table", "json", "yaml"],
    flags: {
      "cgroup-id": { type: "string", value: "N", help: "A cgroup v2 ID (inode of its directory)" },
      "cgroup": {
        type: "string",
        value: "PATH",
        help: "A cgroup v2 path, as /proc/PID/cgroup shows it or under the cgroup2 mount",
      },
      "mntns": { type: "string", value: "N", help: "A mount namespace inode (/proc/PID/ns/mnt)" },
      "output": {
        type: "string",
        short: "o",
        value: "FORMAT",
        help: "table, json or yaml (json and yaml: the container and the pod)",
      },
      "fields": FIELDS,
      "no-headers": NO_HEADERS,
      "socket": SOCKET,
      "config": CONFIG,
      "help": HELP,
    },
    examples: [
      "pods-api whois 4242",
      "pods-api whois --cgroup-id 12345 -o json",
      "pods-api whois --cgroup /kubepods/besteffort/pod1b2c/0f3e...",
      "pods-api whois --mntns 4026532461 -o yaml --fields metadata.labels",
    ],
  },
  completion: {
    usage: "pods-api completion bash|zsh",
    summary:
      "Print a shell completion script: source <(pods-api completion bash), or for zsh: source <(pods-api completion zsh)",
    outputs: [],
    flags: { "help": HELP },
    examples: ["source <(pods-api completion bash)"],
  },
  version: {
    usage: "pods-api version",
    summary: "Print the version.",
    outputs: [],
    flags: { "help": HELP },
    examples: [],
  },
};

/** Bad command-line input: the CLI prints the message as one line and exits 2. */
export class UsageError extends TypeError {
  /** @param message One line naming the flag or argument. */
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/** Parsed flags: strings, booleans and (for `multiple`) string lists. */
export interface ParsedFlags {
  readonly values: Readonly<Record<string, string | boolean | string[] | undefined>>;
  readonly positionals: readonly string[];
}

/** A string flag's value, `undefined` when it was not given. */
export function stringFlag(flags: ParsedFlags, name: string): string | undefined {
  const value = flags.values[name];
  return typeof value === "string" ? value : undefined;
}

/** The `-o` of a command that takes a fixed set of formats (default `table`); else a UsageError. */
export function outputFlag<const T extends string>(flags: ParsedFlags, formats: readonly T[]): T {
  const output = stringFlag(flags, "output") ?? "table";
  if (!(formats as readonly string[]).includes(output)) {
    throw new UsageError(`unknown output format "${output}" for -o: use ${formats.join(", ")}`);
  }
  return output as T;
}

/** Whether a switch was given. */
export function switchFlag(flags: ParsedFlags, name: string): boolean {
  return flags.values[name] === true;
}

/** The values of a flag that may be repeated, empty when it was not given. */
export function listFlag(flags: ParsedFlags, name: string): string[] {
  const value = flags.values[name];
  return Array.isArray(value) ? value : [];
}

/**
 * Parses a subcommand's arguments.
 *
 * @example Usage
 * ```ts
 * import { parseClientFlags } from "./cli_flags.ts";
 * parseClientFlags("list", ["-o=json", "-n", "kube-system"]).values.output; // "json"
 * ```
 *
 * @param command The subcommand.
 * @param args Its arguments.
 * @returns The values and positional arguments.
 * @throws {UsageError} For an unknown flag, a missing value or a value given to a switch.
 */
export function parseClientFlags(command: ClientCommand, args: readonly string[]): ParsedFlags {
  const spec = COMMAND_SPECS[command];
  const options: Record<
    string,
    { type: "string" | "boolean"; short?: string; multiple?: boolean }
  > = {};
  for (const [name, flag] of Object.entries(spec.flags)) {
    options[name] = {
      type: flag.type,
      ...(flag.short ? { short: flag.short } : {}),
      ...(flag.multiple ? { multiple: true } : {}),
    };
  }
  // kubectl takes `-o=json`; parseArgs would read the value as "=json".
  const normalized = args.map((a) => /^-[A-Za-z]=/.test(a) ? [a.slice(0, 2), a.slice(3)] : [a])
    .flat();
  let parsed;
  try {
    parsed = parseArgs({ args: normalized, options, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError(describeParseError(err as Error & { code?: string }, command, spec));
  }
  const values: Record<string, string | boolean | string[] | undefined> = {};
  for (const [name, value] of Object.entries(parsed.values)) {
    values[name] = Array.isArray(value)
      ? value.flatMap((v) => String(v).split(",")).map((v) => v.trim()).filter((v) => v !== "")
      : value as string | boolean | undefined;
  }
  for (const [name, flag] of Object.entries(spec.flags)) {
    if (flag.type === "string" && values[name] === "") {
      throw new UsageError(`flag --${name} needs a value (see pods-api ${command} --help)`);
    }
  }
  return { values, positionals: parsed.positionals };
}

function describeParseError(
  err: Error & { code?: string },
  command: ClientCommand,
  spec: CommandSpec,
): string {
  const quoted = /'(-[^']*)'/.exec(err.message)?.[1] ?? "";
  const flag = quoted.split(/[ ,]/)[0] ?? quoted;
  const see = `(see pods-api ${command} --help)`;
  switch (err.code) {
    case "ERR_PARSE_ARGS_UNKNOWN_OPTION":
      return `unknown flag "${flag}" for "pods-api ${command}" ${see}`;
    case "ERR_PARSE_ARGS_INVALID_OPTION_VALUE": {
      const name = flag.replace(/^-+/, "");
      const long = name.length === 1
        ? Object.entries(spec.flags).find(([, f]) => f.short === name)?.[0] ?? name
        : name;
      return spec.flags[long]?.type === "boolean"
        ? `flag --${long} takes no value ${see}`
        : `flag --${long} needs a value ${see}`;
    }
    default:
      return `${err.message.split("\n")[0]} ${see}`;
  }
}

/**
 * A subcommand's `--help` text.
 *
 * @param command The subcommand.
 * @returns The text.
 */
export function commandHelp(command: ClientCommand): string {
  const spec = COMMAND_SPECS[command];
  const rows = Object.entries(spec.flags).map(([name, flag]) => {
    const left = `${flag.short ? `-${flag.short}, ` : "    "}--${name}${
      flag.value ? ` ${flag.value}` : ""
    }`;
    return [left, flag.help] as const;
  });
  const width = Math.max(...rows.map(([l]) => l.length)) + 2;
  const lines = [
    spec.summary,
    "",
    "Usage:",
    `  ${spec.usage}`,
    "",
    "Flags:",
    ...rows.map(([l, h]) => `  ${l.padEnd(width)}${h}`),
  ];
  if (spec.examples.length > 0) {
    lines.push("", "Examples:", ...spec.examples.map((e) => `  ${e}`));
  }
  return lines.join("\n");
}
