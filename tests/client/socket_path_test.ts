import assert from "node:assert/strict";
import {
  DEFAULT_CONFIG_FILE,
  DEFAULT_SOCKET,
  KUBELET_SOCKET,
  resolveSocket,
} from "../../src/client/mod.ts";

const files: Record<string, string> = {
  [DEFAULT_CONFIG_FILE]: "socket: /run/from-default-config.sock\n",
  "/etc/other.yaml": "socket: /run/from-other-config.sock\n",
  "/etc/nosocket.yaml": "log-level: debug\n",
  "/etc/broken.yaml": "socket: [\n",
};
const readFile = (path: string) => files[path];
/** No socket anywhere: the default is the daemon's own path. */
const socketExists = () => false;

Deno.test("resolveSocket() takes --socket, else PODS_API_SOCKET, else the config file, else the default", async (t) => {
  const env = (value?: string) => (name: string) => name === "PODS_API_SOCKET" ? value : undefined;
  const cases: Array<[string, Parameters<typeof resolveSocket>[0], string, string]> = [
    ["flag first", { flag: "/f.sock", env: env("/e.sock"), readFile }, "/f.sock", "--socket"],
    ["then env", { env: env("/e.sock"), readFile }, "/e.sock", "PODS_API_SOCKET"],
    [
      "then the default config file",
      { env: env(), readFile },
      "/run/from-default-config.sock",
      "config file",
    ],
    [
      "--config names another",
      { configFile: "/etc/other.yaml", env: env(), readFile },
      "/run/from-other-config.sock",
      "config file",
    ],
    [
      "a config without socket",
      { configFile: "/etc/nosocket.yaml", env: env(), readFile, socketExists },
      DEFAULT_SOCKET,
      "default",
    ],
    [
      "no config file at all",
      { env: env(), readFile: () => undefined, socketExists },
      DEFAULT_SOCKET,
      "default",
    ],
  ];
  for (const [name, options, path, origin] of cases) {
    await t.step(name, () => assert.deepEqual(resolveSocket(options), { path, origin }));
  }
});

Deno.test("resolveSocket() reports a named config file it cannot read or parse", () => {
  assert.throws(
    () => resolveSocket({ configFile: "/etc/none.yaml", env: () => undefined, readFile }),
    /Cannot read config file "\/etc\/none.yaml"/,
  );
  assert.throws(
    () => resolveSocket({ configFile: "/etc/broken.yaml", env: () => undefined, readFile }),
    /Cannot parse config file "\/etc\/broken.yaml"/,
  );
});

Deno.test("resolveSocket() defaults to the daemon's own path, else the kubelet's Pods API path", async (t) => {
  const base = { env: () => undefined, readFile: () => undefined };
  const cases: Array<[string, readonly string[], string]> = [
    ["the daemon's own socket exists", [DEFAULT_SOCKET, KUBELET_SOCKET], DEFAULT_SOCKET],
    ["only the kubelet's path has a socket", [KUBELET_SOCKET], KUBELET_SOCKET],
    ["neither: the daemon's own path, for the error", [], DEFAULT_SOCKET],
  ];
  assert.equal(DEFAULT_SOCKET, "/run/pods-api/pods-api.sock");
  assert.equal(KUBELET_SOCKET, "/var/lib/kubelet/pods-api/pods-api.sock");
  for (const [name, present, want] of cases) {
    await t.step(name, () => {
      const socketExists = (path: string) => present.includes(path);
      assert.deepEqual(resolveSocket({ ...base, socketExists }), { path: want, origin: "default" });
    });
  }
});
