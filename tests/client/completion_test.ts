// The bash completion script, run by bash: it offers every command
// (kubeconfig and serve included) and each one's flags.
import assert from "node:assert/strict";
import { bashCompletion } from "../../src/client/completion.ts";

async function complete(words: string[]): Promise<string[]> {
  const script = `${bashCompletion()}
COMP_WORDS=(${words.map((w) => `'${w}'`).join(" ")})
COMP_CWORD=${words.length - 1}
_pods_api
printf '%s\\n' "\${COMPREPLY[@]}"
`;
  const r = await new Deno.Command("bash", {
    args: ["-c", script],
    stdout: "piped",
    stderr: "piped",
    // No daemon is asked: names come only from flags and commands here.
    env: { PATH: "/usr/bin:/bin" },
  }).output();
  assert.equal(r.code, 0, new TextDecoder().decode(r.stderr));
  return new TextDecoder().decode(r.stdout).split("\n").filter((l) => l !== "");
}

Deno.test("bash completion offers kubeconfig and every command's flags", async () => {
  assert.deepEqual(await complete(["pods-api", "k"]), ["kubeconfig"]);
  assert.deepEqual(
    (await complete(["pods-api", ""])).sort(),
    [
      "completion",
      "devices",
      "get",
      "help",
      "kubeconfig",
      "list",
      "ps",
      "serve",
      "version",
      "watch",
      "whois",
    ],
  );
  assert.deepEqual(await complete(["pods-api", "kubeconfig", "--http-c"]), ["--http-cert-dir"]);
  assert.deepEqual(await complete(["pods-api", "serve", "--http-cert"]), ["--http-cert-dir"]);
  assert.deepEqual(await complete(["pods-api", "list", "-o", "j"]), ["json", "jsonpath="]);
});
