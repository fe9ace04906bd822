import assert from "node:assert/strict";
import {
  ALWAYS_KEPT_PATHS,
  FIELD_MASK_ALL,
  FieldMaskError,
  MAX_PATH_DEPTH,
  type ObjectSchema,
  parseFieldMask,
  parseFieldMaskText,
} from "../../src/fieldmask/mod.ts";
import { TEST_POD_SCHEMA } from "./_schema.ts";

const KEPT = "metadata.name,metadata.namespace,metadata.uid";

/** Longest error message any hostile input may produce. */
const MAX_MESSAGE_LENGTH = 400;

function assertMaskError(fn: () => unknown, path: string, messagePart: string): FieldMaskError {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof FieldMaskError, `expected FieldMaskError, got ${caught}`);
  assert.ok(caught instanceof SyntaxError);
  assert.equal(caught.name, "FieldMaskError");
  assert.equal(caught.path, path);
  assert.ok(
    caught.message.includes(messagePart),
    `message ${JSON.stringify(caught.message)} lacks ${JSON.stringify(messagePart)}`,
  );
  assert.ok(
    caught.message.length <= MAX_MESSAGE_LENGTH,
    `message too long: ${caught.message.length}`,
  );
  return caught;
}

Deno.test("parseFieldMask() accepts paths the schema allows", async (t) => {
  const cases: { name: string; paths: string[]; key: string }[] = [
    { name: "a scalar", paths: ["status.phase"], key: `${KEPT},status.phase` },
    { name: "a kept field only", paths: ["metadata.name"], key: KEPT },
    { name: "a whole message", paths: ["status"], key: `${KEPT},status` },
    { name: "the whole metadata", paths: ["metadata"], key: "metadata" },
    { name: "a map", paths: ["metadata.labels"], key: `metadata.labels,${KEPT}` },
    {
      name: "a nested map",
      paths: ["spec.containers.resources.limits"],
      key: `${KEPT},spec.containers.resources.limits`,
    },
    {
      name: "into repeated messages",
      paths: ["spec.containers.name"],
      key: `${KEPT},spec.containers.name`,
    },
    { name: "a repeated message whole", paths: ["status.podIPs"], key: `${KEPT},status.podIPs` },
    {
      name: "a repeated scalar",
      paths: ["spec.containers.command"],
      key: `${KEPT},spec.containers.command`,
    },
    {
      name: "an inline-flattened field",
      paths: ["spec.volumes.configMap.items.key"],
      key: `${KEPT},spec.volumes.configMap.items.key`,
    },
    {
      name: "a deep path",
      paths: ["status.containerStatuses.state.terminated.exitCode"],
      key: `${KEPT},status.containerStatuses.state.terminated.exitCode`,
    },
    { name: "duplicates", paths: ["status.phase", "status.phase"], key: `${KEPT},status.phase` },
    { name: "a path then its parent", paths: ["status.phase", "status"], key: `${KEPT},status` },
    { name: "a parent then its child", paths: ["status", "status.phase"], key: `${KEPT},status` },
    {
      name: "siblings, unsorted",
      paths: ["status.podIP", "metadata.labels", "status.phase"],
      key: `metadata.labels,${KEPT},status.phase,status.podIP`,
    },
    {
      name: "a kept field asked for explicitly",
      paths: ["metadata.uid", "status.phase"],
      key: `${KEPT},status.phase`,
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const mask = parseFieldMask(c.paths, TEST_POD_SCHEMA);
      assert.equal(mask.isAll, false);
      assert.equal(mask.key, c.key);
      assert.deepEqual(mask.paths, c.key.split(","));
      assert.ok(Object.isFrozen(mask) && Object.isFrozen(mask.paths) && Object.isFrozen(mask.root));
    });
  }
});

Deno.test("parseFieldMask() selects the whole pod for an empty mask", async (t) => {
  const cases: { name: string; paths: string[] }[] = [
    { name: "no paths", paths: [] },
    { name: "one empty path", paths: [""] },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const mask = parseFieldMask(c.paths, TEST_POD_SCHEMA);
      assert.equal(mask, FIELD_MASK_ALL);
      assert.equal(mask.isAll, true);
      assert.equal(mask.key, "");
      assert.equal(mask.root, null);
    });
  }
});

Deno.test("parseFieldMask() gives equivalent masks the same key", () => {
  const a = parseFieldMask(["status.phase", "metadata.labels"], TEST_POD_SCHEMA);
  const b = parseFieldMask(
    ["metadata.labels", "status.phase", "metadata.namespace", "status.phase"],
    TEST_POD_SCHEMA,
  );
  assert.equal(a.key, b.key);
  assert.deepEqual(a.root, b.root);
  // The canonical paths parse back to the same mask.
  assert.equal(parseFieldMask(a.paths, TEST_POD_SCHEMA).key, a.key);
});

Deno.test("parseFieldMask() orders the tree by schema field order", () => {
  const mask = parseFieldMask(
    ["status.phase", "metadata.labels", "spec.nodeName"],
    TEST_POD_SCHEMA,
  );
  const root = mask.root;
  assert.ok(root !== null);
  assert.deepEqual(root.fields.map((f) => f.name), ["metadata", "spec", "status"]);
  const metadata = root.fields[0]?.mask;
  assert.ok(metadata);
  assert.deepEqual(metadata.fields.map((f) => f.name), ["name", "namespace", "uid", "labels"]);
  assert.deepEqual(ALWAYS_KEPT_PATHS, ["metadata.uid", "metadata.name", "metadata.namespace"]);
});

Deno.test("parseFieldMask() rejects bad paths naming them", async (t) => {
  const cases: { name: string; paths: string[]; path: string; message: string }[] = [
    {
      name: "unknown top-level field",
      paths: ["bogus"],
      path: "bogus",
      message: 'unknown field "bogus" in "Pod"',
    },
    {
      name: "unknown nested field",
      paths: ["metadata.bogus"],
      path: "metadata.bogus",
      message:
        'Cannot parse field mask path "metadata.bogus": unknown field "bogus" in "ObjectMeta"',
    },
    {
      name: "wrong case",
      paths: ["Metadata.name"],
      path: "Metadata.name",
      message: 'unknown field "Metadata"',
    },
    {
      name: "snake_case",
      paths: ["status.pod_ips"],
      path: "status.pod_ips",
      message: 'unknown field "pod_ips"',
    },
    {
      name: "untrimmed in list form",
      paths: [" status"],
      path: " status",
      message: 'unknown field " status"',
    },
    {
      name: "an index",
      paths: ["spec.containers[0].name"],
      path: "spec.containers[0].name",
      message: "unknown field",
    },
    { name: "a wildcard", paths: ["spec.*"], path: "spec.*", message: 'unknown field "*"' },
    {
      name: "prototype name __proto__",
      paths: ["__proto__"],
      path: "__proto__",
      message: "unknown field",
    },
    {
      name: "prototype name constructor",
      paths: ["constructor"],
      path: "constructor",
      message: "unknown field",
    },
    {
      name: "prototype name toString",
      paths: ["status.toString"],
      path: "status.toString",
      message: "unknown",
    },
    {
      name: "through a scalar",
      paths: ["metadata.name.first"],
      path: "metadata.name.first",
      message: 'field "name" is a scalar and has no fields',
    },
    {
      name: "through a repeated scalar",
      paths: ["spec.containers.command.x"],
      path: "spec.containers.command.x",
      message: 'field "command" is a scalar',
    },
    {
      name: "into a map",
      paths: ["metadata.labels.app"],
      path: "metadata.labels.app",
      message: 'field "labels" is a map; a path may stop at it but not go into it',
    },
    {
      name: "empty segment",
      paths: ["metadata..name"],
      path: "metadata..name",
      message: "empty segment at offset 9",
    },
    {
      name: "leading dot",
      paths: [".metadata"],
      path: ".metadata",
      message: "empty segment at offset 0",
    },
    {
      name: "trailing dot",
      paths: ["metadata."],
      path: "metadata.",
      message: "empty segment at offset 9",
    },
    { name: "a lone dot", paths: ["."], path: ".", message: "empty segment" },
    {
      name: "empty path among others",
      paths: ["metadata.name", ""],
      path: "",
      message: "Cannot parse field mask: path 2 of 2 is empty",
    },
    { name: "two empty paths", paths: ["", ""], path: "", message: "path 1 of 2 is empty" },
    {
      name: "a bad path below a selected message",
      paths: ["status", "status.bogus"],
      path: "status.bogus",
      message: 'unknown field "bogus"',
    },
    {
      name: "a bad path before its selected parent",
      paths: ["status.phase.x", "status"],
      path: "status.phase.x",
      message: "is a scalar",
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      assertMaskError(() => parseFieldMask(c.paths, TEST_POD_SCHEMA), c.path, c.message);
    });
  }
});

Deno.test("parseFieldMask() bounds path depth on a recursive schema", () => {
  const schema: ObjectSchema = {
    root: "Node",
    messages: new Map([["Node", {
      fields: new Map([
        ["next", { kind: "message" as const, repeated: false, type: "Node" }],
        ["value", { kind: "scalar" as const, repeated: false }],
      ]),
    }]]),
  };
  const ok = Array(MAX_PATH_DEPTH).fill("next").join(".");
  assert.equal(parseFieldMask([ok], schema).key, ok);
  const deep = Array(100_000).fill("next").join(".");
  assertMaskError(
    () => parseFieldMask([deep], schema),
    deep,
    `more than ${MAX_PATH_DEPTH} segments`,
  );
});

Deno.test("parseFieldMask() throws TypeError on an inconsistent schema", () => {
  const schema: ObjectSchema = {
    root: "Pod",
    messages: new Map([["Pod", {
      fields: new Map([["spec", { kind: "message" as const, repeated: false, type: "Missing" }]]),
    }]]),
  };
  assert.throws(() => parseFieldMask(["spec"], schema), {
    name: "TypeError",
    message: 'Cannot walk field mask schema: message type "Missing" is not defined',
  });
});

Deno.test("parseFieldMaskText() splits on commas and trims whitespace", async (t) => {
  const cases: { name: string; text: string; key: string }[] = [
    { name: "one path", text: "status.phase", key: `${KEPT},status.phase` },
    {
      name: "the spec example",
      text: "metadata.name,metadata.namespace,status.phase,status.podIPs,spec.containers.name",
      key: `${KEPT},spec.containers.name,status.phase,status.podIPs`,
    },
    {
      name: "spaces after commas",
      text: "status.phase, metadata.labels",
      key: `metadata.labels,${KEPT},status.phase`,
    },
    {
      name: "tabs and newlines",
      text: " \tstatus.phase \n,\r\n metadata.labels\t",
      key: `metadata.labels,${KEPT},status.phase`,
    },
    { name: "overlap", text: "status.phase,status", key: `${KEPT},status` },
    { name: "empty", text: "", key: "" },
    { name: "blank", text: "  \t ", key: "" },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      const mask = parseFieldMaskText(c.text, TEST_POD_SCHEMA);
      assert.equal(mask.key, c.key);
      assert.equal(mask.isAll, c.key === "");
    });
  }
});

Deno.test("parseFieldMaskText() rejects empty paths and bad fields", async (t) => {
  const cases: { name: string; text: string; path: string; message: string }[] = [
    {
      name: "double comma",
      text: "status.phase,,metadata.labels",
      path: "",
      message: "path 2 of 3 is empty",
    },
    { name: "trailing comma", text: "status.phase,", path: "", message: "path 2 of 2 is empty" },
    { name: "leading comma", text: ",status.phase", path: "", message: "path 1 of 2 is empty" },
    {
      name: "blank between commas",
      text: "status.phase, ,status.podIP",
      path: "",
      message: "path 2 of 3 is empty",
    },
    { name: "a lone comma", text: ",", path: "", message: "path 1 of 2 is empty" },
    {
      name: "inner space",
      text: "status. phase",
      path: "status. phase",
      message: 'unknown field " phase"',
    },
    {
      name: "unknown field",
      text: "status.phase,spec.bogus",
      path: "spec.bogus",
      message: 'unknown field "bogus"',
    },
  ];
  for (const c of cases) {
    await t.step(c.name, () => {
      assertMaskError(() => parseFieldMaskText(c.text, TEST_POD_SCHEMA), c.path, c.message);
    });
  }
});

Deno.test("parseFieldMask() survives hostile input", async (t) => {
  const MIB = 1 << 20;

  await t.step("a 1 MiB mask of valid paths", () => {
    const unit = "status.phase,spec.containers.name,";
    const text = unit.repeat(Math.ceil(MIB / unit.length)) + "metadata.labels";
    assert.ok(text.length >= MIB);
    const mask = parseFieldMaskText(text, TEST_POD_SCHEMA);
    assert.equal(mask.key, `metadata.labels,${KEPT},spec.containers.name,status.phase`);
  });

  await t.step("10 000 paths with the bad one last", () => {
    const paths: string[] = Array.from(
      { length: 10_000 },
      (_, i) => i % 2 ? "status.podIPs.ip" : "metadata.annotations",
    );
    paths.push("status.podIPs.ip.v6");
    assertMaskError(
      () => parseFieldMask(paths, TEST_POD_SCHEMA),
      "status.podIPs.ip.v6",
      "is a scalar",
    );
  });

  await t.step("a 1 MiB unknown segment, quoted truncated", () => {
    const path = "status." + "x".repeat(MIB);
    const err = assertMaskError(
      () => parseFieldMask([path], TEST_POD_SCHEMA),
      path,
      `(${path.length} chars)`,
    );
    assert.ok(err.message.includes('"status.xxxx'));
    assert.ok(err.message.includes("…"));
  });

  await t.step("a deep nonsense path", () => {
    const path = "a.".repeat(MIB / 2) + "a";
    assertMaskError(
      () => parseFieldMask([path], TEST_POD_SCHEMA),
      path,
      'unknown field "a" in "Pod"',
    );
  });

  await t.step("a deep path below a scalar", () => {
    const path = "metadata.name" + ".x".repeat(MIB / 2);
    assertMaskError(
      () => parseFieldMask([path], TEST_POD_SCHEMA),
      path,
      'field "name" is a scalar',
    );
  });

  await t.step("a 1 MiB run of dots", () => {
    const path = "spec" + ".".repeat(MIB);
    assertMaskError(
      () => parseFieldMask([path], TEST_POD_SCHEMA),
      path,
      "empty segment at offset 5",
    );
  });

  await t.step("a 1 MiB run of commas", () => {
    assertMaskError(
      () => parseFieldMaskText(",".repeat(MIB), TEST_POD_SCHEMA),
      "",
      "path 1 of 1048577",
    );
  });

  await t.step("control characters are escaped in the message", () => {
    const path = "metadata.na\u0000me\u001b[31m\r\nInjected: yes";
    const err = assertMaskError(
      () => parseFieldMask([path], TEST_POD_SCHEMA),
      path,
      "unknown field",
    );
    const raw = [...err.message].filter((c) => (c.codePointAt(0) ?? 0) < 0x20);
    assert.deepEqual(raw, [], JSON.stringify(err.message));
    assert.ok(err.message.includes("\\u0000"));
  });

  await t.step("lone surrogates are escaped in the message", () => {
    const path = "status.\ud800phase\udfff";
    const err = assertMaskError(
      () => parseFieldMask([path], TEST_POD_SCHEMA),
      path,
      "unknown field",
    );
    assert.ok(err.message.isWellFormed());
  });

  await t.step("truncation does not split a surrogate pair", () => {
    const path = "x".repeat(63) + "😀".repeat(100);
    const err = assertMaskError(
      () => parseFieldMask([path], TEST_POD_SCHEMA),
      path,
      "unknown field",
    );
    assert.ok(err.message.isWellFormed());
  });

  await t.step("replacement characters from bad UTF-8 are unknown fields", () => {
    const path = "status.\ufffd\ufffd";
    assertMaskError(() => parseFieldMask([path], TEST_POD_SCHEMA), path, "unknown field");
  });
});
