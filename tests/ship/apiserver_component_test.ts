/**
 * deploy/components/apiserver-source, as `kubectl kustomize` renders it: on
 * the base (deploy/overlays/apiserver) and on every other overlay, it adds
 * RBAC that may get, list and watch pods and nothing else, for the service
 * account the DaemonSet runs as, mounts that account's token and appends
 * --apiserver=in-cluster (a real flag) to the args it finds. The recipe it
 * replaces (a second ServiceAccount beside the base's) failed to render.
 *
 * @module
 */

import assert from "node:assert/strict";
import { checkServeArgs } from "./_serve_args.ts";
import { PEERS, requirePeer } from "../_support/peers.ts";
import { DEPLOY, type EnvVar, expandArgs, kustomize, kustomizeWith } from "./_kustomize.ts";

const KUBECTL = requirePeer(PEERS.kubectl);

interface Doc {
  kind: string;
  metadata: { name: string; namespace?: string };
  automountServiceAccountToken?: boolean;
  rules?: { apiGroups: string[]; resources: string[]; verbs: string[] }[];
  roleRef?: { kind: string; name: string };
  subjects?: { kind: string; name: string; namespace: string }[];
  spec?: {
    template: {
      spec: {
        serviceAccountName?: string;
        automountServiceAccountToken?: boolean;
        containers: { args: string[]; env: EnvVar[] }[];
      };
    };
  };
}

const render = (dir: string) => kustomize(dir) as Promise<Doc[]>;
const renderWithComponent = (resource: string) =>
  kustomizeWith(resource, ["components/apiserver-source"]) as Promise<Doc[]>;

/** Checks what the component must have added to `docs`; returns the DaemonSet's args. */
function checkComponent(docs: Doc[]): string[] {
  const daemonSet = docs.find((d) => d.kind === "DaemonSet")!;
  const pod = daemonSet.spec!.template.spec;
  const account = docs.find((d) =>
    d.kind === "ServiceAccount" && d.metadata.name === pod.serviceAccountName
  );
  assert.ok(account, "the DaemonSet's service account is rendered");
  assert.equal(docs.filter((d) => d.kind === "ServiceAccount").length, 1);
  const role = docs.find((d) =>
    d.kind === "ClusterRole" && d.metadata.name === "pods-api-pod-reader"
  );
  assert.deepEqual(role?.rules, [{
    apiGroups: [""],
    resources: ["pods"],
    verbs: ["get", "list", "watch"],
  }]);
  const binding = docs.find((d) =>
    d.kind === "ClusterRoleBinding" && d.roleRef?.name === role!.metadata.name
  );
  assert.deepEqual(binding?.subjects, [{
    kind: "ServiceAccount",
    name: account.metadata.name,
    namespace: account.metadata.namespace,
  }]);
  assert.equal(daemonSet.metadata.namespace, account.metadata.namespace);
  assert.equal(pod.automountServiceAccountToken, true, "the token is mounted");
  const [command, ...args] = pod.containers[0]!.args;
  assert.equal(command, "serve");
  assert.equal(args.filter((a) => a.startsWith("--apiserver")).length, 1);
  assert.ok(
    pod.containers[0]!.env.some((e) => e.valueFrom?.fieldRef?.fieldPath === "spec.nodeName"),
    "the node name comes from the downward API",
  );
  // The config map's file is not here; its keys are checked with the base (daemonset_test.ts).
  const expanded = expandArgs(args, pod.containers[0]!.env, { "spec.nodeName": "node-1" });
  const config = checkServeArgs(expanded.filter((a) => !a.startsWith("--config=")));
  assert.equal(config.apiserver, "in-cluster");
  assert.equal(config.socket, "/run/pods-api/pods-api.sock");
  return args;
}

Deno.test({
  name: KUBECTL.name("the apiserver overlay renders the base with the API server source"),
  ignore: KUBECTL.ignore,
  async fn() {
    KUBECTL.check();
    const docs = await render(`${DEPLOY}overlays/apiserver`);
    const args = checkComponent(docs);
    const base = (await render(`${DEPLOY}base`)).find((d) => d.kind === "DaemonSet")!;
    assert.deepEqual(args, [
      ...base.spec!.template.spec.containers[0]!.args.slice(1),
      "--apiserver=in-cluster",
    ]);
  },
});

Deno.test({
  name: KUBECTL.name("the apiserver-source component adds the source to every overlay"),
  ignore: KUBECTL.ignore,
  async fn(t) {
    KUBECTL.check();
    for await (const e of Deno.readDir(`${DEPLOY}overlays`)) {
      if (!e.isDirectory || e.name === "apiserver") continue;
      await t.step(e.name, async () => {
        const overlay = (await render(`${DEPLOY}overlays/${e.name}`)).find((d) =>
          d.kind === "DaemonSet"
        )!;
        const args = checkComponent(await renderWithComponent(`overlays/${e.name}`));
        const before = overlay.spec!.template.spec.containers[0]!.args.slice(1);
        assert.deepEqual(args, [...before, "--apiserver=in-cluster"], "the overlay's args kept");
      });
    }
  },
});
