/**
 * `kubectl kustomize` for the deployment tests: a directory of deploy/, or
 * one with components added as a user's own kustomization would add them.
 *
 * @module
 */

import assert from "node:assert/strict";
import { relative } from "node:path";
import { parseAllDocuments } from "yaml";

/** deploy/, as a path ending in a slash. */
export const DEPLOY: string = new URL("../../deploy/", import.meta.url).pathname;

/**
 * Renders a kustomization directory.
 *
 * @param dir An absolute path.
 * @returns The documents, parsed.
 */
export async function kustomize(dir: string): Promise<unknown[]> {
  const r = await new Deno.Command("kubectl", {
    args: ["kustomize", dir],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(r.code, 0, new TextDecoder().decode(r.stderr));
  return parseAllDocuments(new TextDecoder().decode(r.stdout)).map((d) => d.toJS())
    .filter((d) => d !== null);
}

/**
 * Renders `resource` with `components`, from a kustomization of its own
 * outside deploy/ (kustomize takes relative paths only).
 *
 * @param resource A directory of deploy/, e.g. `overlays/kubelet-url`.
 * @param components Directories of deploy/, e.g. `components/apiserver-source`.
 * @returns The documents, parsed.
 */
export async function kustomizeWith(resource: string, components: string[]): Promise<unknown[]> {
  const dir = await Deno.makeTempDir({ prefix: "pods-api-kustomize-" });
  try {
    const path = (p: string) => relative(dir, `${DEPLOY}${p}`);
    await Deno.writeTextFile(
      `${dir}/kustomization.yaml`,
      [
        "apiVersion: kustomize.config.k8s.io/v1beta1",
        "kind: Kustomization",
        `resources: [${path(resource)}]`,
        `components: [${components.map(path).join(", ")}]`,
        "",
      ].join("\n"),
    );
    return await kustomize(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** A container's env entry, as far as the tests read it. */
export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { fieldRef?: { fieldPath: string } };
}

/**
 * A container's args as the kubelet passes them: `$(VAR)` from its env
 * (values as written, downward API fields from `fields`).
 *
 * @param args The args.
 * @param env The container's env.
 * @param fields Values of downward API fields, e.g. `{ "spec.nodeName": "node-1" }`.
 * @returns The expanded args.
 * @throws {AssertionError} When a `$(VAR)` has no value.
 */
export function expandArgs(
  args: readonly string[],
  env: readonly EnvVar[],
  fields: Readonly<Record<string, string>>,
): string[] {
  const vars = new Map<string, string>();
  for (const e of env) {
    const value = e.value ?? fields[e.valueFrom?.fieldRef?.fieldPath ?? ""];
    if (value !== undefined) vars.set(e.name, value);
  }
  return args.map((a) =>
    a.replace(/\$\(([A-Z_]+)\)/g, (_, name: string) => {
      assert.ok(vars.has(name), `$(${name}) is defined in env`);
      return vars.get(name)!;
    })
  );
}
