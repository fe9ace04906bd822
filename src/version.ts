/**
 * The version printed by `pods-api version` and in the start-up log line:
 * `deno.json`'s `version` (tests/ship/version_test.ts keeps them equal).
 * `deno task compile` and `deno task bundle` add the commit as build
 * metadata (`0.1.0+1a2b3c4`) unless built from the tag `v0.1.0`
 * (scripts/stamp_version.ts).
 *
 * @module
 */

/** The build's version. */
export const BUILD_VERSION = "0.1.0";

/** Go's names for Deno's architectures: Kubernetes and OCI platforms use them. */
const GO_ARCH: Readonly<Record<string, string>> = { "x86_64": "amd64", "aarch64": "arm64" };

/**
 * An architecture as Go names it.
 *
 * @param arch Deno's name (`Deno.build.arch`).
 * @returns `amd64`, `arm64`, or `arch` unchanged.
 */
export function goArch(arch: string = Deno.build.arch): string {
  return GO_ARCH[arch] ?? arch;
}
