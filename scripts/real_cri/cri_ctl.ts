/**
 * A tiny CRI command line for the real-runtime scripts, built on the
 * project's own CRI client (no crictl, no Python):
 *
 * ```
 * cri_ctl.ts SOCKET wait-ready SECONDS   # until RuntimeReady and NetworkReady
 * cri_ctl.ts SOCKET version              # "<name> <version> (CRI <api>)"
 * cri_ctl.ts SOCKET remove-all-pods      # StopPodSandbox + RemovePodSandbox each
 * ```
 *
 * Run: `deno run --allow-read --allow-write --allow-env --allow-sys --allow-net
 * scripts/real_cri/cri_ctl.ts ...`. Exit code 0 on success, 1 on failure, 2
 * on bad usage.
 *
 * @module
 */

import { CriClient } from "../../src/sources/cri/mod.ts";

const ENCODER = new TextEncoder();

function say(line: string): void {
  Deno.stdout.writeSync(ENCODER.encode(line + "\n"));
}

function complain(line: string): void {
  Deno.stderr.writeSync(ENCODER.encode(`[cri_ctl] ${line}\n`));
}

async function waitReady(client: CriClient, seconds: number): Promise<number> {
  const deadline = Date.now() + seconds * 1000;
  let last = "no answer yet";
  while (Date.now() < deadline) {
    try {
      const status = await client.status({}, { timeoutMs: 5000 });
      const conditions = status.status?.conditions ?? [];
      const ok = (type: string) => conditions.some((c) => c.type === type && c.status);
      if (ok("RuntimeReady") && ok("NetworkReady")) return 0;
      last = JSON.stringify(conditions);
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  complain(`CRI not ready after ${seconds} s: ${last}`);
  return 1;
}

async function removeAllPods(client: CriClient): Promise<number> {
  const { items } = await client.listPodSandbox({}, { timeoutMs: 30_000 });
  let failures = 0;
  for (const sandbox of items) {
    try {
      await client.stopPodSandbox({ podSandboxId: sandbox.id }, { timeoutMs: 60_000 });
      await client.removePodSandbox({ podSandboxId: sandbox.id }, { timeoutMs: 60_000 });
    } catch (err) {
      failures++;
      complain(`pod sandbox ${sandbox.id}: ${err instanceof Error ? err.message : err}`);
    }
  }
  complain(`removed ${items.length - failures} of ${items.length} pod sandbox(es)`);
  return failures === 0 ? 0 : 1;
}

async function main(args: string[]): Promise<number> {
  const [socket, command, arg] = args;
  if (socket === undefined || command === undefined) {
    complain("usage: cri_ctl.ts SOCKET (wait-ready SECONDS | version | remove-all-pods)");
    return 2;
  }
  using client = new CriClient(socket, { requestTimeoutMs: 30_000 });
  switch (command) {
    case "wait-ready":
      return await waitReady(client, Number(arg ?? "60"));
    case "version": {
      const v = await client.version();
      say(`${v.runtimeName} ${v.runtimeVersion} (CRI ${v.runtimeApiVersion})`);
      return 0;
    }
    case "remove-all-pods":
      return await removeAllPods(client);
    default:
      complain(`unknown command "${command}"`);
      return 2;
  }
}

if (import.meta.main) {
  try {
    Deno.exit(await main(Deno.args));
  } catch (err) {
    complain(err instanceof Error ? err.message : String(err));
    Deno.exit(1);
  }
}
