import assert from "node:assert/strict";
import { JsonPath, JsonPathError } from "../../src/client/jsonpath.ts";

const DATA = {
  kind: "List",
  items: [
    {
      metadata: { name: "a", labels: { app: "web" } },
      status: { phase: "Running", podIPs: [{ ip: "10.0.0.1" }, { ip: "fd00::1" }] },
    },
    { metadata: { name: "b", labels: { app: "db" } }, status: { phase: "Pending", podIPs: [] } },
  ],
};

Deno.test("JsonPath renders kubectl templates", async (t) => {
  const cases: Array<[string, string]> = [
    ["{.kind}", "List"],
    ["{.items[*].metadata.name}", "a b"],
    ["{.items[0].status.podIPs[1].ip}", "fd00::1"],
    ["{.items[-1].metadata.name}", "b"],
    ["{.items[0:1].metadata.name}", "a"],
    ['{range .items[*]}{.metadata.name}={.status.phase}{"\\n"}{end}', "a=Running\nb=Pending\n"],
    ['{.items[?(@.status.phase=="Pending")].metadata.name}', "b"],
    ["{.items[?(@.metadata.labels.app!='web')].metadata.name}", "b"],
    ["{.items[0].metadata.labels}", '{"app":"web"}'],
    ["{.items[0].metadata.labels['app']}", "web"],
    ["{..ip}", "10.0.0.1 fd00::1"],
    ["name: {.items[1].metadata.name}!", "name: b!"],
    ["{.nothing}", ""],
    [".items[1].metadata.name", "b"],
  ];
  for (const [template, want] of cases) {
    await t.step(template, () => assert.equal(new JsonPath(template).execute(DATA), want));
  }
});

Deno.test("JsonPath names the bad part of a malformed template", async (t) => {
  for (
    const bad of ["{.items[0", "{range .items[*]}{.a}", "{end}", "{.items[?(@.a=~x)]}", "{.a b}"]
  ) {
    await t.step(bad, () => assert.throws(() => new JsonPath(bad), JsonPathError));
  }
});

Deno.test("JsonPath.first() gives the value --sort-by sorts on", () => {
  assert.equal(new JsonPath(".status.phase").first(DATA.items[0]), "Running");
  assert.equal(new JsonPath("{.status.podIPs[0].ip}").first(DATA.items[1]), undefined);
});
