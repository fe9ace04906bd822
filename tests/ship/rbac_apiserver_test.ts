/**
 * deploy/rbac-apiserver.yaml and deploy/apiserver-source-patch.yaml: the
 * service account may get, list and watch pods and nothing else, and the
 * patched DaemonSet runs under it with --apiserver=in-cluster, a real flag.
 *
 * @module
 */

import assert from "node:assert/strict";
import { parse, parseAllDocuments } from "yaml";
import { checkServeArgs } from "./_serve_args.ts";

const DEPLOY = new URL("../../deploy/", import.meta.url);

interface Doc {
  kind: string;
  metadata: { name: string; namespace?: string };
  rules?: { apiGroups: string[]; resources: string[]; verbs: string[] }[];
  roleRef?: { kind: string; name: string };
  subjects?: { kind: string; name: string; namespace: string }[];
}

type Patch = { op: string; path: string; value: unknown }[];

/** Applies the patch's operations (add, replace, append) to a plain object. */
function applyPatch(target: Record<string, unknown>, patch: Patch): void {
  for (const { op, path, value } of patch) {
    const keys = path.split("/").slice(1);
    const last = keys.pop()!;
    let at: unknown = target;
    for (const key of keys) {
      at = Array.isArray(at) ? at[Number(key)] : (at as Record<string, unknown>)[key];
      assert.ok(at !== undefined, `patch path ${path} does not exist`);
    }
    if (last === "-") {
      assert.ok(Array.isArray(at), `append to ${path}, which is not a list`);
      at.push(value);
      continue;
    }
    assert.ok(op === "add" || op === "replace", `unexpected op ${op}`);
    const object = at as Record<string, unknown>;
    if (op === "replace") assert.ok(last in object, `replace of missing ${path}`);
    object[last] = value;
  }
}

Deno.test("the API server source's RBAC grants get, list and watch on pods only", async () => {
  const docs = parseAllDocuments(await Deno.readTextFile(new URL("rbac-apiserver.yaml", DEPLOY)))
    .map((d) => d.toJS() as Doc);
  const account = docs.find((d) => d.kind === "ServiceAccount")!;
  const role = docs.find((d) => d.kind === "ClusterRole")!;
  const binding = docs.find((d) => d.kind === "ClusterRoleBinding")!;
  assert.deepEqual(role.rules, [{
    apiGroups: [""],
    resources: ["pods"],
    verbs: ["get", "list", "watch"],
  }]);
  assert.deepEqual(binding.roleRef, {
    apiGroup: "rbac.authorization.k8s.io",
    kind: "ClusterRole",
    name: role.metadata.name,
  });
  assert.deepEqual(binding.subjects, [{
    kind: "ServiceAccount",
    name: account.metadata.name,
    namespace: account.metadata.namespace,
  }]);

  const daemonset = parse(await Deno.readTextFile(new URL("base/daemonset.yaml", DEPLOY)));
  const patch: Patch = parse(
    await Deno.readTextFile(new URL("apiserver-source-patch.yaml", DEPLOY)),
  );
  applyPatch(daemonset, patch);
  assert.equal(daemonset.metadata.namespace, account.metadata.namespace);
  const pod = daemonset.spec.template.spec;
  assert.equal(pod.serviceAccountName, account.metadata.name);
  assert.equal(pod.automountServiceAccountToken, true);
  const [command, ...args] = pod.containers[0].args;
  assert.equal(command, "serve");
  // The config map's file is not here; its keys are checked with the base (daemonset_test.ts).
  const config = checkServeArgs(args.filter((a: string) => !a.startsWith("--config=")));
  assert.equal(config.apiserver, "in-cluster");
  assert.ok(
    pod.containers[0].env.some((e: { valueFrom?: { fieldRef?: { fieldPath: string } } }) =>
      e.valueFrom?.fieldRef?.fieldPath === "spec.nodeName"
    ),
    "the node name comes from the downward API",
  );
});
