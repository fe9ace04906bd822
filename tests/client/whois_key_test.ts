// `pods-api whois` refuses what is not one process key, naming the value,
// before it calls the daemon.
import assert from "node:assert/strict";
import { UsageError } from "../../src/client/cli_flags.ts";
import { whoisKey } from "../../src/client/whois_command.ts";

function key(positionals: string[], values: Record<string, string> = {}) {
  return whoisKey({ positionals, values });
}

Deno.test("whoisKey() reads a PID, --cgroup-id, --cgroup or --mntns", () => {
  assert.deepEqual(key(["4242"]), { kind: "pid", pid: 4242 });
  assert.deepEqual(key([], { "cgroup-id": "9876" }), { kind: "cgroupId", cgroupId: 9876 });
  assert.deepEqual(key([], { cgroup: "/kubepods/x" }), { kind: "cgroupPath", path: "/kubepods/x" });
  assert.deepEqual(key([], { mntns: "4026532461" }), { kind: "mntns", inode: 4026532461 });
});

Deno.test("whoisKey() refuses PID 0, negatives and what is not a number, naming the value", () => {
  for (
    const [args, values, text] of [
      [["0"], {}, /PID .*"0"/],
      [["-4"], {}, /PID .*"-4"/],
      [["abc"], {}, /PID .*"abc"/],
      [["1e3"], {}, /PID .*"1e3"/],
      [[], { "cgroup-id": "x1" }, /--cgroup-id .*"x1"/],
      [[], { mntns: "-1" }, /--mntns .*"-1"/],
      [["1", "2"], {}, /name one process/],
      [[], {}, /name one process/],
    ] as const
  ) {
    assert.throws(
      () => key([...args], values),
      (err: unknown) => err instanceof UsageError && text.test(err.message),
      JSON.stringify(args),
    );
  }
});
