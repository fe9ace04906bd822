// The CLI as a user runs it: subprocesses against `serve --simulate`, exit codes and exact lines.
import assert from "node:assert/strict";
import { COMMAND_SPECS } from "../../src/client/cli_flags.ts";
import { lines } from "./_cli_output.ts";
import { type CliResult, runCli } from "./_sim_daemon.ts";

function assertUsage(r: CliResult, line: string): void {
  assert.equal(r.code, 2, r.stderr);
  assert.equal(r.stdout, "");
  assert.deepEqual(lines(r.stderr), [line]);
}

Deno.test("pods-api CMD --help prints the command's help and exits 0, for every client command", async (t) => {
  const cases = [
    ...Object.keys(COMMAND_SPECS).map((c) => [c, "--help"]),
    ["list", "-h"],
    ["get", "pods", "--help"],
    ["get", "--bogus", "--help"],
    ["serve", "--help"],
    ["kubeconfig", "--help"],
    ["--help"],
  ];
  for (const args of cases) {
    await t.step(args.join(" "), async () => {
      const r = await runCli(args);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stderr, "");
      const cmd = args[0] === "get" && args[1] === "pods" ? "list" : args[0]!;
      const spec = COMMAND_SPECS[cmd as keyof typeof COMMAND_SPECS];
      if (spec !== undefined) {
        assert.equal(lines(r.stdout)[0], spec.summary);
        assert.match(r.stdout, /\nUsage:\n {2}pods-api /);
        for (const flag of Object.keys(spec.flags)) {
          assert.match(r.stdout, new RegExp(`--${flag}\\b`));
        }
      } else {
        assert.match(r.stdout, /Usage:/);
      }
    });
  }
});

Deno.test("pods-api reports bad usage as one line naming the flag, exit 2", async (t) => {
  const cases: Array<[string[], string]> = [
    [
      ["list", "--bogus"],
      'pods-api list: unknown flag "--bogus" for "pods-api list" (see pods-api list --help)',
    ],
    [
      ["list", "-x"],
      'pods-api list: unknown flag "-x" for "pods-api list" (see pods-api list --help)',
    ],
    [["list", "-o"], "pods-api list: flag --output needs a value (see pods-api list --help)"],
    [
      ["list", "--no-headers=yes"],
      "pods-api list: flag --no-headers takes no value (see pods-api list --help)",
    ],
    [
      ["list", "-o", "xml"],
      'pods-api list: unknown output format "xml" for -o: use table, wide, name, json, yaml, jsonpath=TEMPLATE',
    ],
    [
      ["list", "-o=jsonpath={.items[0"],
      'pods-api list: flag -o: Cannot parse JSONPath "{.items[0": unclosed "{"',
    ],
    [["list", "-n", "a", "-A"], "pods-api list: flags -n and -A cannot be used together"],
    [
      ["list", "-l", "app in (a"],
      'pods-api list: Cannot parse label selector "app in (a": found end of input at position 10, expected "," or ")"',
    ],
    [
      ["list", "--field-selector", "spec.image=x"],
      'pods-api list: Cannot use field selector "spec.image=x": field label "spec.image" not supported for pods',
    ],
    [
      ["list", "somepod"],
      'pods-api list: unexpected argument "somepod": list takes no names (use pods-api get NS/NAME)',
    ],
    [["get"], "pods-api get: name a pod: UID, NS/NAME, -n NS NAME, --container-id ID or --ip IP"],
    [
      ["get", "a/b", "--ip", "10.0.0.1"],
      "pods-api get: name one pod: one of UID, NS/NAME, --container-id, --ip",
    ],
    [
      ["watch", "-o", "jsonpath={.a}"],
      'pods-api watch: unknown output format "jsonpath={.a}" for -o: use table, wide, name, json, yaml',
    ],
    [
      ["ps", "--state", "sleeping"],
      'pods-api ps: flag --state: unknown state "sleeping": use running, exited, created or unknown',
    ],
    [["ps", "--name", "("], 'pods-api ps: flag --name: "(" is not a regular expression'],
    [["completion", "fish"], "pods-api completion: name one shell: pods-api completion bash|zsh"],
    [["frobnicate"], 'pods-api: unknown command "frobnicate" (see pods-api --help)'],
  ];
  for (const [args, line] of cases) {
    await t.step(args.join(" "), async () => assertUsage(await runCli(args), line));
  }
});
