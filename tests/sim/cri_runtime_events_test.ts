// The simulated CRI runtime sends what containerd 1.7.24 sent for the same
// calls: tests/_fixtures/cri_events_containerd_1_7.json, captured from a real
// containerd by scripts/real_cri/capture_events.py. The runtime is driven
// through its socket and the project's CRI client, so the test also covers
// how the events go over the wire (a sandbox DELETED with no status at all).
import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { SimCriRuntime } from "../../src/sim/runtime/cri_runtime.ts";
import { startCriServer } from "../../src/sim/runtime/cri_server.ts";
import {
  CONTAINER_EVENT_TYPE,
  CONTAINER_STATE,
  type ContainerEventResponse,
  CriClient,
  POD_SANDBOX_STATE,
  type RuntimeService,
} from "../../src/sources/cri/mod.ts";
import { poll } from "../_support/poll.ts";
import { removeTree } from "../_support/remove_tree.ts";

/** An event as the fixture holds it: roles for IDs, enum names for values. */
interface NormalEvent {
  type: string;
  containerId: string;
  podSandboxStatus: { id: string; state: string } | null;
  containersStatuses: { id: string; name: string; state: string; exitCode: number }[];
}

interface CapturedStep {
  call: string;
  events: NormalEvent[];
}

interface Capture {
  runtime: { name: string; version: string; apiVersion: string };
  scenarios: Record<string, CapturedStep[]>;
}

const CAPTURE = JSON.parse(
  await Deno.readTextFile(
    new URL("../_fixtures/cri_events_containerd_1_7.json", import.meta.url),
  ),
) as Capture;

/** The upstream enum names of the values we send (the fixture's spelling). */
const EVENT_TYPE_NAMES: Record<number, string> = {
  [CONTAINER_EVENT_TYPE.created]: "CONTAINER_CREATED_EVENT",
  [CONTAINER_EVENT_TYPE.started]: "CONTAINER_STARTED_EVENT",
  [CONTAINER_EVENT_TYPE.stopped]: "CONTAINER_STOPPED_EVENT",
  [CONTAINER_EVENT_TYPE.deleted]: "CONTAINER_DELETED_EVENT",
};
const SANDBOX_STATE_NAMES: Record<number, string> = {
  [POD_SANDBOX_STATE.ready]: "SANDBOX_READY",
  [POD_SANDBOX_STATE.notReady]: "SANDBOX_NOTREADY",
};
const CONTAINER_STATE_NAMES: Record<number, string> = {
  [CONTAINER_STATE.created]: "CONTAINER_CREATED",
  [CONTAINER_STATE.running]: "CONTAINER_RUNNING",
  [CONTAINER_STATE.exited]: "CONTAINER_EXITED",
  [CONTAINER_STATE.unknown]: "CONTAINER_UNKNOWN",
};

function named(names: Record<number, string>, value: number | undefined): string {
  return names[value ?? 0] ?? `unknown ${value}`;
}

/** The event with its IDs replaced by `roles` (an ID with no role is kept, and fails). */
function normalise(event: ContainerEventResponse, roles: Map<string, string>): NormalEvent {
  const role = (id: string) => roles.get(id) ?? `unexpected ID ${id}`;
  const sandbox = event.podSandboxStatus;
  return {
    type: named(EVENT_TYPE_NAMES, event.containerEventType),
    containerId: role(event.containerId),
    podSandboxStatus: sandbox === null || sandbox === undefined
      ? null
      : { id: role(sandbox.id), state: named(SANDBOX_STATE_NAMES, sandbox.state) },
    containersStatuses: (event.containersStatuses ?? []).map((c) => ({
      id: role(c.id),
      name: c.metadata?.name ?? "",
      state: named(CONTAINER_STATE_NAMES, c.state),
      exitCode: c.exitCode,
    })),
  };
}

/** The calls of one captured scenario, made the same way as the capture made them. */
async function makeCall(
  client: RuntimeService,
  call: string,
  ids: { sandbox: string; app: string },
): Promise<void> {
  const uid = "capture";
  const sandboxConfig = {
    metadata: { name: "capture", namespace: "default", uid, attempt: 0 },
    hostname: "capture",
  };
  switch (call) {
    case "RunPodSandbox":
      ids.sandbox = (await client.runPodSandbox({ config: sandboxConfig })).podSandboxId;
      return;
    case "CreateContainer":
      ids.app = (await client.createContainer({
        podSandboxId: ids.sandbox,
        config: {
          metadata: { name: "app", attempt: 0 },
          image: { image: "localhost/real-cri/busybox:1" },
          command: ["/bin/sleep", "3600"],
        },
        sandboxConfig,
      })).containerId;
      return;
    case "StartContainer":
      await client.startContainer({ containerId: ids.app });
      return;
    case "StopContainer":
      await client.stopContainer({ containerId: ids.app, timeout: 0 });
      return;
    case "StopPodSandbox":
      await client.stopPodSandbox({ podSandboxId: ids.sandbox });
      return;
    case "RemoveContainer":
      await client.removeContainer({ containerId: ids.app });
      return;
    case "RemovePodSandbox":
      await client.removePodSandbox({ podSandboxId: ids.sandbox });
      return;
  }
  throw new Error(`the fixture names a call the test does not make: ${call}`);
}

Deno.test("the capture holds the containerd 1.7 sequence of issue 37", () => {
  assert.equal(CAPTURE.runtime.name, "containerd");
  assert.match(CAPTURE.runtime.version, /^1\.7\./);
  const flat = CAPTURE.scenarios["kubeletLifecycle"]!.flatMap((s) => s.events);
  assert.deepEqual(
    flat.map((e) => [e.type, e.containerId, e.podSandboxStatus?.state ?? "none"]),
    [
      ["CONTAINER_CREATED_EVENT", "sandbox", "SANDBOX_READY"],
      ["CONTAINER_STARTED_EVENT", "sandbox", "SANDBOX_READY"],
      ["CONTAINER_CREATED_EVENT", "app", "SANDBOX_READY"],
      ["CONTAINER_STARTED_EVENT", "app", "SANDBOX_READY"],
      ["CONTAINER_STOPPED_EVENT", "app", "SANDBOX_READY"],
      ["CONTAINER_STOPPED_EVENT", "sandbox", "SANDBOX_NOTREADY"],
      ["CONTAINER_DELETED_EVENT", "app", "SANDBOX_NOTREADY"],
      ["CONTAINER_DELETED_EVENT", "sandbox", "none"],
    ],
  );
});

for (const [scenario, steps] of Object.entries(CAPTURE.scenarios)) {
  Deno.test(`SimCriRuntime sends what containerd 1.7 sent: ${scenario}`, async (t) => {
    const dir = await Deno.makeTempDir({ prefix: "sim-cri-events-" });
    const clock = new FakeClock();
    const runtime = new SimCriRuntime({ clock, runtimeName: "containerd" });
    const server = await startCriServer(runtime, { socketPath: `${dir}/cri.sock` });
    const client = new CriClient(server.endpoint, { requestTimeoutMs: 5000 });
    const stop = new AbortController();
    const events = client.getContainerEvents({}, { signal: stop.signal });
    try {
      // The subscription is open once the runtime counts it; the first
      // read sends the call.
      const first = events.next();
      await poll(() => runtime.eventSubscribers > 0 ? true : undefined, {
        what: "the subscription",
      });
      const ids = { sandbox: "", app: "" };
      let pending: Promise<IteratorResult<ContainerEventResponse>> | undefined = first;
      for (const [index, step] of steps.entries()) {
        await t.step(`${index + 1}. ${step.call}`, async () => {
          clock.advance(1000);
          const callNs = clock.now() * 1e6;
          await makeCall(client, step.call, ids);
          const roles = new Map([[ids.sandbox, "sandbox"], [ids.app, "app"]]);
          const got: NormalEvent[] = [];
          for (const _ of step.events) {
            const next = await (pending ?? events.next());
            pending = undefined;
            assert.ok(!next.done, "the event stream ended");
            const event = next.value;
            // Stamped when it happened, by the runtime's clock (containerd's
            // arrive within a millisecond of their created_at).
            assert.ok(event.createdAt >= callNs && event.createdAt < callNs + 1e6);
            got.push(normalise(event, roles));
          }
          assert.deepEqual(got, step.events);
        });
      }
      // Nothing more was sent for these calls: the next event is a new sandbox's.
      await t.step("no further events", async () => {
        const { podSandboxId } = await client.runPodSandbox({
          config: { metadata: { name: "after", namespace: "default", uid: "after", attempt: 0 } },
        });
        const next = await events.next();
        assert.ok(!next.done);
        assert.equal(next.value.containerId, podSandboxId);
        assert.equal(next.value.containerEventType, CONTAINER_EVENT_TYPE.created);
      });
    } finally {
      stop.abort();
      await events.return(undefined).catch(() => {});
      client[Symbol.dispose]();
      await server[Symbol.asyncDispose]();
      await removeTree(dir);
    }
  });
}

for (const [scenario, steps] of Object.entries(CAPTURE.scenarios)) {
  Deno.test(`SimCriRuntime builds each event's statuses when its change happens: ${scenario} back to back`, async () => {
    const runtime = new SimCriRuntime({ clock: new FakeClock(), runtimeName: "containerd" });
    const stop = new AbortController();
    const events = runtime.getContainerEvents({}, { signal: stop.signal });
    const first = events.next();
    try {
      // In process, every call before any event is read: the statuses are
      // still those of each change, not of the end.
      const ids = { sandbox: "", app: "" };
      for (const step of steps) await makeCall(runtime, step.call, ids);
      const roles = new Map([[ids.sandbox, "sandbox"], [ids.app, "app"]]);
      const got: NormalEvent[] = [];
      const expected = steps.flatMap((s) => s.events);
      for (let i = 0; i < expected.length; i++) {
        const next = i === 0 ? await first : await events.next();
        assert.ok(!next.done);
        got.push(normalise(next.value, roles));
      }
      assert.deepEqual(got, expected);
    } finally {
      stop.abort();
      await events.return(undefined);
    }
  });
}
