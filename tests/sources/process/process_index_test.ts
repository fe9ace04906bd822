import assert from "node:assert/strict";
import { Registry } from "../../../src/metrics/exposition.ts";
import { createMetrics } from "../../../src/metrics/metrics.ts";
import { RpcError, STATUS } from "../../../src/server/errors.ts";
import { lookupProcess } from "../../../src/server/process_lookup.ts";
import {
  cgroupDirOf,
  cgroupRootsAt,
  parseContainerInfo,
  ProcessIndex,
  ProcessLookupError,
  type ProcFs,
  type RunningContainerProcess,
} from "../../../src/sources/process/mod.ts";

/** A host of files, inodes and links; a path missing throws NotFound, one in `denied` PermissionDenied. */
function fakeFs(
  files: Record<string, string>,
  inodes: Record<string, number>,
  denied: string[] = [],
): ProcFs {
  const get = <T>(table: Record<string, T>, path: string): T => {
    if (denied.some((d) => path.startsWith(d))) throw new Deno.errors.PermissionDenied(path);
    const v = table[path];
    if (v === undefined) throw new Deno.errors.NotFound(path);
    return v;
  };
  return {
    readText: (p) => get(files, p),
    inode: (p) => get(inodes, p),
    readLink: (p) => get(files, p),
  };
}

const ROOT = "/sys/fs/cgroup/unified";
const DIR = "/kubepods/besteffort/pod1/c1";
const FILES = {
  "/proc/100/cgroup": `4:memory:${DIR}\n0::${DIR}\n`,
  "/proc/100/ns/mnt": "mnt:[4026532461]",
  "/proc/101/cgroup": `0::${DIR}/sub\n`,
  "/proc/1/cgroup": "0::/init.scope\n",
};
const INODES = { [`${ROOT}/cgroup.controllers`]: 1, [`${ROOT}${DIR}`]: 5555 };

function source(list: RunningContainerProcess[]) {
  return { containerProcesses: () => list };
}

const RUNNING: RunningContainerProcess[] = [
  { containerId: "c1", podUid: "pod1", pid: 100, cgroupsPath: DIR },
];

function index(list = RUNNING, fs = fakeFs(FILES, INODES)) {
  return new ProcessIndex(source(list), { fs, cgroupRoots: ["/sys/fs/cgroup", ROOT] });
}

function failsWith(fn: () => unknown, reason: string, text: RegExp) {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof ProcessLookupError);
    assert.equal(err.reason, reason);
    assert.match(err.message, text);
    return true;
  });
}

Deno.test("parseContainerInfo() reads containerd's pid and cgroupsPath", () => {
  assert.deepEqual(
    parseContainerInfo({
      info: JSON.stringify({ pid: 42, runtimeSpec: { linux: { cgroupsPath: "a:b:c" } } }),
    }),
    { pid: 42, cgroupsPath: "a:b:c" },
  );
  assert.equal(parseContainerInfo({ info: JSON.stringify({ pid: 0 }) }), undefined);
  assert.equal(parseContainerInfo({ info: "{" }), undefined);
  assert.equal(parseContainerInfo(undefined), undefined);
});

Deno.test("parseContainerInfo() reads CRI-O's info, whose JSON has sandboxID and privileged beside pid and runtimeSpec", () => {
  // CRI-O's verbose ContainerStatus: info["info"] is its containerInfo, and
  // under the systemd driver cgroupsPath is slice:crio:ID (crio-ID.scope).
  const info = {
    sandboxID: "5f1e",
    pid: 3117,
    privileged: false,
    runtimeSpec: {
      ociVersion: "1.0.2-dev",
      linux: { cgroupsPath: "kubepods-burstable-pod7c1d.slice:crio:9ab2" },
    },
  };
  const process = parseContainerInfo({ info: JSON.stringify(info) });
  assert.deepEqual(process, {
    pid: 3117,
    cgroupsPath: "kubepods-burstable-pod7c1d.slice:crio:9ab2",
  });
  assert.equal(
    cgroupDirOf(process.cgroupsPath),
    "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod7c1d.slice/crio-9ab2.scope",
  );
});

Deno.test("cgroupDirOf() expands the systemd driver's slice:prefix:name as runc does", () => {
  assert.equal(
    cgroupDirOf("kubepods-besteffort-pod1.slice:cri-containerd:abc"),
    "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1.slice/cri-containerd-abc.scope",
  );
  assert.equal(cgroupDirOf("/kubepods/besteffort/pod1/abc"), "/kubepods/besteffort/pod1/abc");
  assert.equal(cgroupDirOf(""), undefined);
});

Deno.test("ProcessIndex.lookup() finds a container by PID, child PID, cgroup ID, path and mntns", () => {
  const idx = index();
  for (
    const key of [
      { kind: "pid", pid: 100 },
      { kind: "pid", pid: 101 },
      { kind: "cgroupId", cgroupId: 5555 },
      { kind: "cgroupPath", path: DIR },
      { kind: "cgroupPath", path: `${ROOT}${DIR}/sub` },
      { kind: "mntns", inode: 4026532461 },
    ] as const
  ) {
    const got = idx.lookup(key);
    assert.equal(got.containerId, "c1", JSON.stringify(key));
    assert.equal(got.cgroupId, 5555);
    assert.equal(got.mntns, 4026532461);
  }
});

Deno.test("ProcessIndex.lookup() answers not_found outside pods and after the container left", () => {
  failsWith(() => index().lookup({ kind: "pid", pid: 1 }), "not_found", /"1".*"\/init.scope"/);
  failsWith(() => index().lookup({ kind: "pid", pid: 999 }), "not_found", /"999"/);
  let list = RUNNING;
  const idx = new ProcessIndex({ containerProcesses: () => list }, {
    fs: fakeFs(FILES, INODES),
    cgroupRoots: [ROOT],
  });
  assert.equal(idx.lookup({ kind: "pid", pid: 100 }).containerId, "c1");
  list = [];
  failsWith(() => idx.lookup({ kind: "pid", pid: 100 }), "not_found", /not in a container/);
  failsWith(() => idx.lookup({ kind: "cgroupId", cgroupId: 5555 }), "not_found", /"5555"/);
  failsWith(() => idx.lookup({ kind: "mntns", inode: 4026532461 }), "not_found", /4026532461/);
});

Deno.test("ProcessIndex.lookup() refuses bad input naming the value", async (t) => {
  const cases = [
    { key: { kind: "pid", pid: 0 }, text: /PID "0"/ },
    { key: { kind: "pid", pid: -3 }, text: /PID "-3"/ },
    { key: { kind: "pid", pid: Number.NaN }, text: /PID "NaN"/ },
    { key: { kind: "pid", pid: 1.5 }, text: /PID "1.5"/ },
    { key: { kind: "pid", pid: 5_000_000 }, text: /PID "5000000"/ },
    { key: { kind: "cgroupId", cgroupId: 0 }, text: /cgroup ID "0"/ },
    { key: { kind: "cgroupId", cgroupId: -1 }, text: /cgroup ID "-1"/ },
    { key: { kind: "mntns", inode: 0 }, text: /mount namespace inode "0"/ },
    { key: { kind: "cgroupPath", path: ".." }, text: /"\.\."/ },
    { key: { kind: "cgroupPath", path: "/kubepods/.." }, text: /"\/kubepods\/\.\."/ },
    { key: { kind: "cgroupPath", path: "/kubepods/../etc" }, text: /"\/kubepods\/..\/etc"/ },
    { key: { kind: "cgroupPath", path: "kubepods" }, text: /"kubepods"/ },
    {
      key: { kind: "cgroupPath", path: "/sys/fs/cgroup/memory/x" },
      text: /"\/sys\/fs\/cgroup\/memory\/x" is outside/,
    },
  ] as const;
  for (const c of cases) {
    await t.step(
      JSON.stringify(c.key),
      () => failsWith(() => index().lookup(c.key), "invalid", c.text),
    );
  }
});

Deno.test("ProcessIndex.lookup() is unavailable, naming what is missing, without /proc or cgroups", () => {
  failsWith(
    () => index(RUNNING, fakeFs(FILES, {})).lookup({ kind: "pid", pid: 100 }),
    "unavailable",
    /cgroup v2 hierarchy/,
  );
  failsWith(
    () => index(RUNNING, fakeFs(FILES, INODES, ["/proc"])).lookup({ kind: "pid", pid: 100 }),
    "unavailable",
    /permission denied.*hostPID/,
  );
  failsWith(
    () => index(RUNNING, fakeFs({}, INODES)).lookup({ kind: "cgroupId", cgroupId: 5555 }),
    "unavailable",
    /hostPID: true/,
  );
});

/** A host where opening any file fails as it does when the daemon is out of descriptors. */
function exhaustedFs(fs: ProcFs, fails: (path: string) => boolean): ProcFs {
  const emfile = (path: string) => {
    if (!fails(path)) return;
    throw Object.assign(new Error(`Too many open files (os error 24): open '${path}'`), {
      code: "EMFILE",
    });
  };
  return {
    readText: (p) => (emfile(p), fs.readText(p)),
    inode: (p) => (emfile(p), fs.inode(p)),
    readLink: (p) => (emfile(p), fs.readLink(p)),
  };
}

Deno.test("ProcessIndex.lookup() out of file descriptors is exhausted, counted, and recovers", async () => {
  const metrics = createMetrics(new Registry());
  let out = true;
  const fs = exhaustedFs(fakeFs(FILES, INODES), (p) => out && p === "/proc/101/cgroup");
  const idx = new ProcessIndex(source(RUNNING), { fs, cgroupRoots: [ROOT], metrics });
  assert.equal(idx.lookup({ kind: "pid", pid: 100 }).containerId, "c1");
  failsWith(
    () => idx.lookup({ kind: "pid", pid: 101 }),
    "exhausted",
    /"\/proc\/101\/cgroup".*no file descriptor left.*LimitNOFILE/,
  );
  out = false;
  assert.equal(idx.lookup({ kind: "pid", pid: 101 }).containerId, "c1");
  // While the index is built too.
  const building = new ProcessIndex(source(RUNNING), {
    fs: exhaustedFs(fakeFs(FILES, INODES), (p) => p.startsWith("/proc/100/")),
    cgroupRoots: [ROOT],
    metrics,
  });
  failsWith(
    () => building.lookup({ kind: "cgroupId", cgroupId: 5555 }),
    "exhausted",
    /"\/proc\/100"/,
  );
  const outcomes = Object.fromEntries(
    (await metrics.processLookups.get()).values.map((v) => [v.labels.outcome, v.value]),
  );
  assert.deepEqual(outcomes, {
    found: 2,
    not_found: 0,
    invalid: 0,
    unavailable: 0,
    exhausted: 2,
  });
});

Deno.test("lookupProcess() answers UNAVAILABLE, with the message, when out of descriptors", () => {
  const fs = exhaustedFs(fakeFs(FILES, INODES), (p) => p === "/proc/101/cgroup");
  const idx = new ProcessIndex(source(RUNNING), { fs, cgroupRoots: [ROOT] });
  const engine = { lookup: () => undefined };
  assert.throws(
    () => lookupProcess({ kind: "pid", pid: 101 }, idx, engine),
    (err: unknown) => {
      assert.ok(err instanceof RpcError);
      assert.equal(err.code, STATUS.UNAVAILABLE);
      assert.match(err.message, /no file descriptor left/);
      return true;
    },
  );
  assert.throws(
    () => lookupProcess({ kind: "pid", pid: -3 }, idx, engine),
    (err: unknown) =>
      err instanceof RpcError && err.code === STATUS.INVALID_ARGUMENT &&
      /"-3"/.test(err.message),
  );
});

Deno.test("ProcessIndex reads a host /proc and cgroup tree mounted elsewhere (--host-proc, --host-cgroup-root)", () => {
  const files: Record<string, string> = {};
  for (const [path, text] of Object.entries(FILES)) files[`/host${path}`] = text;
  const inodes = {
    [`/host${ROOT}/cgroup.controllers`]: 1,
    [`/host${ROOT}${DIR}`]: 5555,
  };
  const idx = new ProcessIndex(source(RUNNING), {
    fs: fakeFs(files, inodes),
    procRoot: "/host/proc",
    cgroupRoots: cgroupRootsAt("/host/sys/fs/cgroup/"),
  });
  for (
    const key of [
      { kind: "pid", pid: 101 },
      { kind: "cgroupPath", path: `${ROOT}${DIR}` },
      { kind: "cgroupPath", path: `/host${ROOT}${DIR}/sub` },
      { kind: "cgroupId", cgroupId: 5555 },
    ] as const
  ) {
    assert.equal(idx.lookup(key).cgroupPath, DIR, JSON.stringify(key));
  }
  failsWith(
    () => idx.lookup({ kind: "cgroupPath", path: "/host/sys/fs/cgroup/memory/x" }),
    "invalid",
    /outside the cgroup v2 root "\/sys\/fs\/cgroup\/unified"/,
  );
  assert.deepEqual(cgroupRootsAt(""), ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]);
});

Deno.test("ProcessIndex finds a process whose cgroup the daemon's own cgroup namespace shows relative", () => {
  // The daemon in /kubepods/besteffort/pod9/d9 with a cgroup namespace of its own.
  const files = { ...FILES, "/proc/102/cgroup": `0::/../../pod1/c1/sub\n` };
  const idx = index(RUNNING, fakeFs(files, INODES));
  assert.equal(idx.lookup({ kind: "pid", pid: 102 }).containerId, "c1");
  const outside = { ...FILES, "/proc/103/cgroup": `0::/../../../../system.slice/x\n` };
  failsWith(
    () => index(RUNNING, fakeFs(outside, INODES)).lookup({ kind: "pid", pid: 103 }),
    "not_found",
    /"103"/,
  );
});

Deno.test("ProcessIndex names --host-proc when Deno will not read /proc under scoped permissions", () => {
  const fs: ProcFs = {
    readText: (p) => {
      throw new Deno.errors.NotCapable(`Requires all access to "${p}"`);
    },
    inode: (p) => fakeFs(FILES, INODES).inode(p),
    readLink: (p) => fakeFs(FILES, INODES).readLink(p),
  };
  failsWith(
    () => index(RUNNING, fs).lookup({ kind: "pid", pid: 101 }),
    "unavailable",
    /--allow-all.*--host-proc and --host-cgroup-root/,
  );
});

Deno.test("ProcessIndex indexes a container whose mount namespace the kernel hides, counted, found by all else", async () => {
  const metrics = createMetrics(new Registry());
  const hidden = fakeFs(FILES, INODES);
  const fs: ProcFs = {
    ...hidden,
    readLink: (p) => {
      throw new Deno.errors.PermissionDenied(`readlink '${p}'`);
    },
  };
  const idx = new ProcessIndex(source(RUNNING), { fs, cgroupRoots: [ROOT], metrics });
  assert.equal(idx.lookup({ kind: "pid", pid: 101 }).containerId, "c1");
  assert.equal(idx.lookup({ kind: "cgroupId", cgroupId: 5555 }).mntns, 0);
  failsWith(() => idx.lookup({ kind: "mntns", inode: 4026532461 }), "not_found", /4026532461/);
  assert.equal((await metrics.processNamespacesUnreadable.get()).values[0]?.value, 1);
});
