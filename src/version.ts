/**
 * The version printed by `pods-api version` and in the start-up log line.
 * `deno task compile` and `deno task bundle` rewrite BUILD_VERSION from the
 * git tag or commit before building (scripts/stamp_version.ts).
 *
 * @module
 */

/** The build's version. */
export const BUILD_VERSION = "0.1.0-dev";
