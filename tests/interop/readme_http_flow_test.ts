// The README's kubectl flow, command by command as written, with Debian's
// kubectl and curl against `pods-api serve --simulate`: only the node's paths
// (/etc/pods-api, /var/lib/kubelet/pods-api), the port and the node name are
// moved into a temporary directory. A token must bring HTTPS with a kept
// self-signed certificate that the kubeconfig trusts, or kubectl sends no token.
import assert from "node:assert/strict";
import { readmeCommands } from "../_support/readme_blocks.ts";
import { poll } from "../_support/poll.ts";
import { RUN_FLAGS } from "../client/_sim_daemon.ts";
import { PEERS, requirePeer } from "../_support/peers.ts";

const MAIN = new URL("../../main.ts", import.meta.url).pathname;

const PEER = requirePeer(PEERS.kubectl, PEERS.curl, PEERS.openssl);

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/** A `pods-api` on PATH that keeps the daemon's state, and the node, in `dir`. */
async function installWrapper(dir: string): Promise<void> {
  const deno = [Deno.execPath(), ...RUN_FLAGS, MAIN].map((a) => `'${a}'`).join(" ");
  await Deno.mkdir(`${dir}/bin`, { recursive: true });
  await Deno.writeTextFile(
    `${dir}/bin/pods-api`,
    `#!/bin/bash
cmd=$1; shift
case "$cmd" in
  serve) exec ${deno} serve "$@" --simulate --hostname-override node-1 \\
    --socket '${dir}/state/pods-api.sock' --http-cert-dir '${dir}/state/pki' \\
    --metrics-bind-address 127.0.0.1:0 ;;
  kubeconfig) exec ${deno} kubeconfig "$@" --http-cert-dir '${dir}/state/pki' ;;
  *) exec ${deno} "$cmd" "$@" ;;
esac
`,
    { mode: 0o755 },
  );
  await Deno.writeTextFile(`${dir}/bin/hostname`, "#!/bin/sh\necho node-1\n", { mode: 0o755 });
}

Deno.test({
  name: PEER.name("the README's HTTP API flow works as written with kubectl and curl"),
  ignore: PEER.ignore,
  async fn() {
    PEER.check();
    const dir = await Deno.makeTempDir({ prefix: "pods-api-readme-http-" });
    await installWrapper(dir);
    const port = freePort();
    const env = { HOME: dir, PATH: `${dir}/bin:${Deno.env.get("PATH")}` };
    const commands = (await readmeCommands(
      "Kubernetes-compatible HTTP API (kubectl, client-go, python-kubernetes)",
    ))
      .map((c) =>
        c.replaceAll("/etc/pods-api", `${dir}/etc`)
          .replaceAll("/var/lib/kubelet/pods-api", `${dir}/state`)
          .replaceAll("127.0.0.1:9470", `127.0.0.1:${port}`)
      );
    const bash = (command: string) =>
      new Deno.Command("bash", {
        args: ["-c", `set -eo pipefail; ${command}`],
        cwd: dir,
        env,
        stdout: "piped",
        stderr: "piped",
      });
    let daemon: Deno.ChildProcess | undefined;
    const outputs: string[] = [];
    try {
      for (const command of commands) {
        if (command.startsWith("pods-api serve ")) {
          assert.match(command, / &$/, "the README starts the daemon in the background");
          daemon = bash(`exec ${command.slice(0, -2)}`).spawn();
          const started = await firstLine(daemon.stderr, /"pods-api started"/);
          const metrics = JSON.parse(started).metrics as string;
          await poll(async () => {
            const r = await fetch(`http://${metrics}/readyz`).catch(() => undefined);
            await r?.body?.cancel();
            return r?.ok ? true : undefined;
          }, { what: "the daemon to be ready" });
          continue;
        }
        if (/ -w$|watch=true/.test(command)) {
          // A watch runs until stopped: its first line is enough.
          const child = bash(`exec ${command}`).spawn();
          const line = await firstLine(child.stdout, /\S/);
          child.kill("SIGTERM");
          await child.status;
          await child.stderr.cancel();
          outputs.push(line);
          continue;
        }
        const r = await bash(command).output();
        const stderr = new TextDecoder().decode(r.stderr);
        assert.equal(r.code, 0, `${command}\n${stderr}`);
        outputs.push(new TextDecoder().decode(r.stdout));
      }
      assert.ok(daemon !== undefined, "the README starts the daemon");
      const kubeconfig = await Deno.readTextFile(`${dir}/node.kubeconfig`);
      assert.match(kubeconfig, new RegExp(`server: https://127\\.0\\.0\\.1:${port}`));
      assert.match(kubeconfig, /certificate-authority-data: /);
      const [wide, selected, yaml, watch, pods, events] = outputs.slice(
        commands.findIndex((c) => c.includes("get pods -A -o wide")) - commands.length,
      );
      assert.match(wide!, /^NAMESPACE\s+NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\s+IP\s+NODE/);
      assert.match(wide!, /\bnginx-proxy-node-1\b/);
      assert.match(selected!, /^NAME\s+READY/);
      assert.ok(selected!.trim().split("\n").length > 1, "the selector matches pods: " + selected);
      assert.match(yaml!, /^kind: Pod$/m);
      assert.match(yaml!, /^ {2}name: nginx-proxy-node-1$/m);
      assert.match(watch!, /^NAMESPACE\s+NAME/);
      assert.equal(JSON.parse(pods!).kind, "PodList");
      assert.equal(JSON.parse(events!).type, "ADDED");
      // The token files and the kept certificate are where the README says.
      const pki = (await Array.fromAsync(Deno.readDir(`${dir}/state/pki`))).map((e) => e.name)
        .sort();
      assert.deepEqual(pki, ["pods-api-http-ca.crt", "pods-api-http.crt", "pods-api-http.key"]);
      assert.equal((await Deno.stat(`${dir}/state/pki/pods-api-http.key`)).mode! & 0o777, 0o600);
    } finally {
      if (daemon !== undefined) {
        daemon.kill("SIGTERM");
        await daemon.status;
        await daemon.stdout.cancel().catch(() => {});
      }
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});

/** Reads `stream` until a line matches; the rest of the stream is drained in the background. */
async function firstLine(stream: ReadableStream<Uint8Array>, pattern: RegExp): Promise<string> {
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`ended before a line matching ${pattern}: ${text}`);
    text += value;
    const line = text.split("\n").slice(0, -1).find((l) => pattern.test(l));
    if (line !== undefined) {
      (async () => {
        while (!(await reader.read()).done) { /* drain */ }
      })().catch(() => {});
      return line;
    }
  }
}
