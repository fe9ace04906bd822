/**
 * Names and identifiers the way Kubernetes and containerd make them: pod
 * name suffixes from the apiserver's generateName alphabet, pod-template
 * hashes, container IDs and image digests.
 *
 * @module
 */

import { hashString, Prng, stableHex } from "../_prng.ts";
import { SIMULATED_RUNTIME_NAME } from "../simulated_runtime_name.ts";

/** The alphabet of generated name suffixes (no vowels, no look-alike digits). */
const SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789";

function fromAlphabet(prng: Prng, length: number): string {
  let out = "";
  for (let i = 0; i < length; i++) out += SUFFIX_ALPHABET[prng.int(0, SUFFIX_ALPHABET.length - 1)];
  return out;
}

/**
 * @param prng The generator to draw from.
 * @returns A five-character suffix like `x2k4p`, as `generateName` appends.
 */
export function nameSuffix(prng: Prng): string {
  return fromAlphabet(prng, 5);
}

/**
 * A ReplicaSet's `pod-template-hash`: stable for a workload and seed.
 *
 * @param key What identifies the template (workload name, seed).
 * @returns Nine or ten characters from the suffix alphabet.
 */
export function templateHash(key: string): string {
  const prng = new Prng(hashString(key));
  return fromAlphabet(prng, prng.chance(0.5) ? 9 : 10);
}

/**
 * @param prng The generator to draw from.
 * @returns A container ID with the simulated runtime's scheme,
 *   `pods-api-simulated://<64 hex>` (64 hex digits, as containerd makes them).
 */
export function containerId(prng: Prng): string {
  return `${SIMULATED_RUNTIME_NAME}://${prng.hex(64)}`;
}

/**
 * The digest reference the runtime reports for an image, stable per image.
 *
 * @param image A full image reference with a tag.
 * @returns `<repository>@sha256:<64 hex>`.
 */
export function imageId(image: string): string {
  const slash = image.lastIndexOf("/");
  const colon = image.lastIndexOf(":");
  const repo = colon > slash ? image.slice(0, colon) : image;
  return `${repo}@sha256:${stableHex(`image/${image}`, 64)}`;
}
