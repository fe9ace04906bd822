/**
 * Shell completion scripts for `pods-api`, made from the flag table so they
 * never fall behind it: subcommands, each subcommand's flags, the `-o`
 * formats, and namespaces and pod names asked of the daemon itself.
 *
 * @module
 */

import { SERVE_FLAGS } from "../config_flags.ts";
import { CLIENT_COMMANDS, COMMAND_SPECS } from "./cli_flags.ts";
import { KUBECONFIG_FLAGS } from "./kubeconfig.ts";

/** The commands that are not clients of the socket, and their flags. */
const OTHER_COMMANDS: Readonly<Record<string, readonly string[]>> = {
  serve: Object.keys(SERVE_FLAGS),
  kubeconfig: Object.keys(KUBECONFIG_FLAGS),
};

function flagWords(command: keyof typeof COMMAND_SPECS): string {
  const spec = COMMAND_SPECS[command];
  return Object.entries(spec.flags)
    .flatMap(([name, f]) => f.short ? [`--${name}`, `-${f.short}`] : [`--${name}`])
    .join(" ");
}

function outputWords(command: keyof typeof COMMAND_SPECS): string {
  return COMMAND_SPECS[command].outputs.map((o) => o.replace("=TEMPLATE", "=")).join(" ");
}

/**
 * The bash completion script (`source <(pods-api completion bash)`).
 *
 * @returns The script.
 */
export function bashCompletion(): string {
  const commands = ["serve", ...CLIENT_COMMANDS, "kubeconfig", "help"].join(" ");
  const cases = [
    ...CLIENT_COMMANDS.map((c) =>
      `    ${c}) flags="${flagWords(c)}"; outputs="${outputWords(c)}" ;;`
    ),
    ...Object.entries(OTHER_COMMANDS).map(([c, names]) =>
      `    ${c}) flags="${[...names.map((n) => `--${n}`), "--help"].join(" ")}" ;;`
    ),
  ].join("\n");
  return `# bash completion for pods-api
_pods_api() {
  local cur prev cmd flags outputs
  cur="\${COMP_WORDS[COMP_CWORD]}"
  prev="\${COMP_WORDS[COMP_CWORD-1]}"
  cmd="\${COMP_WORDS[1]}"
  if [[ \${COMP_CWORD} -eq 1 ]]; then
    COMPREPLY=( $(compgen -W "${commands}" -- "\${cur}") )
    return
  fi
  case "\${cmd}" in
${cases}
    *) return ;;
  esac
  case "\${prev}" in
    -o|--output) COMPREPLY=( $(compgen -W "\${outputs}" -- "\${cur}") ); return ;;
    -n|--namespace)
      COMPREPLY=( $(compgen -W "$(pods-api list -o 'jsonpath={.items[*].metadata.namespace}' 2>/dev/null)" -- "\${cur}") ); return ;;
    --socket|--config|--*-file) COMPREPLY=( $(compgen -f -- "\${cur}") ); return ;;
    --*-dir|--pod-manifest-path) COMPREPLY=( $(compgen -d -- "\${cur}") ); return ;;
    --state) COMPREPLY=( $(compgen -W "running exited created unknown" -- "\${cur}") ); return ;;
  esac
  if [[ "\${cur}" == -* ]]; then
    COMPREPLY=( $(compgen -W "\${flags}" -- "\${cur}") )
  elif [[ "\${cmd}" == completion ]]; then
    COMPREPLY=( $(compgen -W "bash zsh" -- "\${cur}") )
  elif [[ "\${cmd}" == get ]]; then
    COMPREPLY=( $(compgen -W "pods $(pods-api list -o 'jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name} {end}' 2>/dev/null)" -- "\${cur}") )
  fi
}
complete -F _pods_api pods-api
`;
}

/**
 * The zsh completion script (`source <(pods-api completion zsh)`), bash's
 * run through zsh's `bashcompinit`.
 *
 * @returns The script.
 */
export function zshCompletion(): string {
  return `#compdef pods-api
# zsh completion for pods-api
autoload -U +X compinit && compinit
autoload -U +X bashcompinit && bashcompinit
${bashCompletion()}`;
}
