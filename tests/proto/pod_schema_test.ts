import { deepStrictEqual, equal, ok } from "node:assert/strict";
import type { FieldSchema } from "../../src/fieldmask/schema.ts";
import { POD_SCHEMA, PODS_API_DESCRIPTOR } from "../../src/proto/mod.ts";
import { OUT_FILE, renderDescriptorModule } from "../../scripts/gen_proto.ts";

function field(type: string, name: string): FieldSchema | undefined {
  return POD_SCHEMA.messages.get(`k8s.io.api.core.v1.${type}`)?.fields.get(name) ??
    POD_SCHEMA.messages.get(`k8s.io.apimachinery.pkg.apis.meta.v1.${type}`)?.fields.get(name);
}

Deno.test("POD_SCHEMA starts at the pod and names JSON fields", () => {
  equal(POD_SCHEMA.root, "k8s.io.api.core.v1.Pod");
  deepStrictEqual([...POD_SCHEMA.messages.get(POD_SCHEMA.root)!.fields.keys()], [
    "metadata",
    "spec",
    "status",
  ]);
  deepStrictEqual(field("Pod", "spec"), {
    kind: "message",
    repeated: false,
    type: "k8s.io.api.core.v1.PodSpec",
  });
  deepStrictEqual(field("PodSpec", "containers"), {
    kind: "message",
    repeated: true,
    type: "k8s.io.api.core.v1.Container",
  });
  deepStrictEqual(field("Container", "args"), { kind: "scalar", repeated: true });
});

Deno.test("POD_SCHEMA flattens inline structs and treats special types as scalars", () => {
  // Volume.volumeSource, Probe.handler, EphemeralContainer.ephemeralContainerCommon,
  // ConfigMapKeySelector.localObjectReference are inline in JSON.
  equal(field("Volume", "volumeSource"), undefined);
  equal(field("Volume", "configMap")?.type, "k8s.io.api.core.v1.ConfigMapVolumeSource");
  equal(field("Probe", "httpGet")?.type, "k8s.io.api.core.v1.HTTPGetAction");
  equal(field("Probe", "handler"), undefined);
  equal(field("EphemeralContainer", "image")?.kind, "scalar");
  equal(field("EphemeralContainer", "targetContainerName")?.kind, "scalar");
  equal(field("ConfigMapKeySelector", "name")?.kind, "scalar");
  ok(!POD_SCHEMA.messages.has("k8s.io.api.core.v1.VolumeSource"));
  ok(!POD_SCHEMA.messages.has("k8s.io.api.core.v1.EphemeralContainerCommon"));
  deepStrictEqual(field("ObjectMeta", "creationTimestamp"), { kind: "scalar", repeated: false });
  deepStrictEqual(field("EmptyDirVolumeSource", "sizeLimit"), { kind: "scalar", repeated: false });
  deepStrictEqual(field("HTTPGetAction", "port"), { kind: "scalar", repeated: false });
  deepStrictEqual(field("ObjectMeta", "labels"), { kind: "map", repeated: false });
  deepStrictEqual(field("ResourceRequirements", "limits"), { kind: "map", repeated: false });
  ok(!POD_SCHEMA.messages.has("k8s.io.apimachinery.pkg.apis.meta.v1.Time"));
});

Deno.test("PODS_API_DESCRIPTOR holds the pod closure and both services", () => {
  const ns = PODS_API_DESCRIPTOR.nested;
  const core = ns.k8s.nested.io.nested.api.nested.core.nested.v1.nested;
  equal(Object.keys(core).length, 133);
  ok("Pods" in ns.v1alpha1.nested);
  ok("Pods" in ns && "PodListResponse" in ns);
  equal(core.Pod.fields.spec.id, 2);
  equal(core.PodSpec.fields.ephemeralContainers.id, 34);
});

Deno.test("renderDescriptorModule() matches the committed descriptor", async () => {
  const { text } = await renderDescriptorModule();
  equal(await Deno.readTextFile(OUT_FILE), text, "run the gen:proto task");
});
