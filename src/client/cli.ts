/**
 * The client subcommands of `pods-api`: `list` (and `get pods`), `get`,
 * `watch`, `ps`, `devices`, `whois`, `completion`, each with `--help`,
 * kubectl's and crictl's flags and output, and errors a person can act on;
 * this module picks the subcommand, each lives in its own `*_command.ts`.
 * Exit codes: 0 done, 1 the daemon could not answer (the message says why),
 * 2 bad usage.
 *
 * @module
 */

import {
  type ClientCommand,
  commandHelp,
  parseClientFlags,
  type ParsedFlags,
  UsageError,
} from "./cli_flags.ts";
import { CLIENT_EXIT, type CliIo, describeError } from "./cli_io.ts";
import { bashCompletion, zshCompletion } from "./completion.ts";
import { devicesCommand } from "./devices_command.ts";
import { getCommand } from "./get_command.ts";
import { listCommand } from "./list_command.ts";
import { openClient } from "./pod_command_setup.ts";
import { psCommand } from "./ps_command.ts";
import { SelectorError } from "../query/mod.ts";
import { watchCommand } from "./watch_command.ts";
import { whoisCommand } from "./whois_command.ts";

/** Usage lines of the client subcommands, for the top-level help. */
export const CLIENT_USAGE = `Client commands (each takes --help):
  pods-api list   [-n NS|-A] [-l SEL] [--field-selector SEL] [-o table|wide|name|json|yaml|jsonpath=T]
  pods-api get    UID | NS/NAME | -n NS NAME | --container-id ID | --ip IP  [-o ...]
  pods-api watch  [-n NS|-A] [-l SEL] [--watch-only] [-o table|wide|name|json|yaml]
  pods-api ps     [-a] [--pod POD] [--name RE] [--state S] [-q]
  pods-api devices [DEVICE] [-n NS|-A] [--resource NAME] [--node] [-o table|wide|json|yaml]
  pods-api whois PID | --cgroup-id N | --cgroup PATH | --mntns N [-o table|json|yaml]
  pods-api completion bash|zsh`;

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

function completionCommand(flags: ParsedFlags, io: CliIo): number {
  const [shell, ...more] = flags.positionals;
  if (shell === undefined || more.length > 0 || (shell !== "bash" && shell !== "zsh")) {
    throw new UsageError(`name one shell: pods-api completion bash|zsh`);
  }
  io.out(shell === "bash" ? bashCompletion() : zshCompletion());
  return CLIENT_EXIT.ok;
}
