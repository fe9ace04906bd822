import assert from "node:assert/strict";
import {
  compileSelector,
  normalizeIp,
  parseFieldSelector,
  parseLabelSelector,
  SelectorError,
} from "../../src/query/mod.ts";
import { makePod } from "../_fixtures/pods.ts";

const web = makePod({
  name: "web-1",
  namespace: "payments",
  labels: { app: "web", tier: "front", "example.com/team": "pay", replicas: "3" },
  podIP: "10.1.0.4",
  nodeName: "node-1",
});
const db = makePod({
  name: "db-0",
  namespace: "payments",
  labels: { app: "db" },
  phase: "Pending",
  nodeName: "node-1",
});

Deno.test("compileSelector() matches label selectors as Kubernetes does", async (t) => {
  const cases: Array<[string, boolean, boolean]> = [
    ["", true, true],
    ["app=web", true, false],
    ["app==web", true, false],
    ["app!=web", false, true],
    ["tier!=front", false, true],
    ["app in (web,api)", true, false],
    ["app notin (web)", false, true],
    ["tier notin (x)", true, true],
    ["tier", true, false],
    ["!tier", false, true],
    ["app=web,tier=front", true, false],
    ["app=web, tier=back", false, false],
    ["example.com/team=pay", true, false],
    ["replicas>2", true, false],
    ["replicas<2", false, false],
    ["app in (web, db) , !canary", true, true],
    ["tier=", false, false],
    ["missing!=", true, true],
  ];
  for (const [text, matchesWeb, matchesDb] of cases) {
    await t.step(text === "" ? "(empty)" : text, () => {
      const selector = compileSelector({ labelSelector: text });
      assert.equal(selector.matches(web), matchesWeb);
      assert.equal(selector.matches(db), matchesDb);
    });
  }
});

Deno.test("parseLabelSelector() names the token it stopped at", async (t) => {
  const cases: Array<[string, string]> = [
    ["app=web,", ""],
    ["app in (web", ""],
    ["app in web", "web"],
    ["app = = web", "="],
    ["-bad=x", "-bad"],
    ["app=web)", ")"],
    ["app=bad value", "value"],
    ["app>x", "x"],
    ["a/b/c=x", "a/b/c"],
  ];
  for (const [text, token] of cases) {
    await t.step(text, () => {
      assert.throws(() => parseLabelSelector(text), (err: unknown) => {
        assert.ok(err instanceof SelectorError);
        assert.equal(err.token, token);
        assert.match(err.message, /^Cannot parse label selector/);
        if (token !== "") assert.ok(err.message.includes(`"${token}"`), err.message);
        return true;
      });
    });
  }
});

Deno.test("compileSelector() matches the API server's pod field selectors", async (t) => {
  const cases: Array<[string, boolean, boolean]> = [
    ["metadata.name=web-1", true, false],
    ["metadata.namespace==payments", true, true],
    ["status.phase=Running", true, false],
    ["status.phase!=Running", false, true],
    ["spec.nodeName=node-1,status.phase=Pending", false, true],
    ["status.podIP=10.1.0.4", true, false],
    ["spec.hostNetwork=false", true, true],
    ["status.nominatedNodeName=", true, true],
    ["spec.restartPolicy=Always", true, true],
  ];
  for (const [text, matchesWeb, matchesDb] of cases) {
    await t.step(text, () => {
      const selector = compileSelector({ fieldSelector: text });
      assert.equal(selector.matches(web), matchesWeb);
      assert.equal(selector.matches(db), matchesDb);
    });
  }
});

Deno.test("parseFieldSelector() refuses unsupported fields and terms without operator, naming them", () => {
  assert.throws(
    () => parseFieldSelector("spec.nodeName=n,spec.priority=1"),
    (err: unknown) => err instanceof SelectorError && err.token === "spec.priority",
  );
  assert.throws(
    () => parseFieldSelector("status.phase"),
    (err: unknown) => err instanceof SelectorError && err.token === "status.phase",
  );
  assert.deepEqual(parseFieldSelector("metadata.name=a\\,b"), [
    { field: "metadata.name", negate: false, value: "a,b" },
  ]);
});

Deno.test("compileSelector() gives equal keys to equal selections, and a namespace limits it", () => {
  const a = compileSelector({ labelSelector: "b=2,a=1", namespace: "x" });
  const b = compileSelector({ labelSelector: "a=1, b=2", namespace: "x" });
  assert.equal(a.key, b.key);
  assert.notEqual(a.key, compileSelector({ labelSelector: "a=1,b=2" }).key);
  assert.equal(compileSelector({ namespace: "payments" }).matches(web), true);
  assert.equal(compileSelector({ namespace: "default" }).matches(web), false);
  assert.equal(compileSelector({}).isAll, true);
});

Deno.test("normalizeIp() gives one form for every notation of an address", async (t) => {
  const cases: Array<[string, string | undefined]> = [
    ["10.1.2.3", "10.1.2.3"],
    [" 10.1.2.3 ", "10.1.2.3"],
    ["010.1.2.3", undefined],
    ["256.1.2.3", undefined],
    ["2001:DB8::1", "2001:db8::1"],
    ["2001:db8:0:0:0:0:0:1", "2001:db8::1"],
    ["2001:0db8:0000:0000:0001:0000:0000:0001", "2001:db8::1:0:0:1"],
    ["fd00::", "fd00::"],
    ["::", "::"],
    ["::1", "::1"],
    ["::ffff:10.0.0.1", "10.0.0.1"],
    ["64:ff9b::10.0.0.1", "64:ff9b::a00:1"],
    ["1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8"],
    ["1:0:0:2:0:0:0:3", "1:0:0:2::3"],
    ["1::2::3", undefined],
    ["1:2:3:4:5:6:7:8:9", undefined],
    ["web", undefined],
    ["", undefined],
  ];
  for (const [input, expected] of cases) {
    await t.step(JSON.stringify(input), () => assert.equal(normalizeIp(input), expected));
  }
});
