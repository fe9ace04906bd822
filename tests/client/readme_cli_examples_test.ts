// The README's CLI examples, as written, on the demo node (`serve
// --simulate` with the demo's size, churn and seed): each one exits 0 and
// prints something, so none names a label, pod or address the demo does not
// have. Only the socket path is the test's own.
import assert from "node:assert/strict";
import { commandScript } from "../../scripts/install.ts";
import { readmeCommands } from "../_support/readme_blocks.ts";
import { startSimDaemon } from "./_sim_daemon.ts";

const MAIN = new URL("../../main.ts", import.meta.url).pathname;

Deno.test("every example of the README's CLI section prints something on the demo node", async () => {
  await using daemon = await startSimDaemon({ pods: 30, churn: 1, seed: 1 });
  const bin = `${daemon.dir}/bin`;
  await Deno.mkdir(bin);
  await Deno.writeTextFile(`${bin}/pods-api`, commandScript(Deno.execPath(), MAIN), {
    mode: 0o755,
  });
  // The simulated node is named "vm" (the harness's --hostname-override).
  await Deno.writeTextFile(`${bin}/hostname`, "#!/bin/sh\necho vm\n", { mode: 0o755 });
  const env = {
    PATH: `${bin}:${Deno.env.get("PATH")}`,
    HOME: Deno.env.get("HOME") ?? daemon.dir,
    PODS_API_SOCKET: daemon.socket,
  };
  const commands = await readmeCommands("The CLI");
  assert.ok(commands.length >= 12, `examples found: ${commands.length}`);
  const results: string[] = [];
  for (const command of commands) {
    if (command.startsWith("export PODS_API_SOCKET=")) continue; // the test's socket instead
    const bash = new Deno.Command("bash", {
      args: ["-c", `set -o pipefail; ${/^pods-api watch /.test(command) ? "exec " : ""}${command}`],
      env,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    });
    if (/^pods-api watch /.test(command)) {
      // A watch runs until stopped: its first line is enough.
      const child = bash.spawn();
      const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
      const { value } = await reader.read();
      child.kill("SIGINT");
      await reader.cancel();
      await child.stderr.cancel();
      await child.status;
      assert.ok((value ?? "").trim() !== "", `${command}: printed nothing`);
      continue;
    }
    let r = await bash.output();
    // The demo node churns: a pod picked by one command may be gone for the next. Once more.
    if (r.code !== 0) r = await bash.output();
    const out = new TextDecoder().decode(r.stdout);
    const err = new TextDecoder().decode(r.stderr);
    assert.equal(r.code, 0, `${command}\n${err}`);
    if (command.startsWith("source ")) continue; // defines a function, prints nothing
    assert.ok(out.trim() !== "", `${command}: printed nothing (${err.trim()})`);
    assert.doesNotMatch(err, /No resources found|Not found/, command);
    results.push(command);
  }
  assert.ok(results.length >= 10);
});
