/**
 * Checks shared by the deployment tests: the `serve` arguments that the
 * systemd unit and the DaemonSet pass must be real flags with valid values.
 *
 * @module
 */

import assert from "node:assert/strict";
import { parseServeConfig, type ServeConfig } from "../../src/config.ts";
import { SERVE_FLAGS } from "../../src/config_flags.ts";

/**
 * The flag names in `serve` arguments (`--name=value` or `--name value`).
 *
 * @param args Arguments after `serve`.
 * @returns The names, without dashes, in order.
 */
export function flagNames(args: readonly string[]): string[] {
  return args.filter((a) => a.startsWith("--")).map((a) => a.slice(2).split("=")[0]!);
}

/**
 * Asserts that every argument is a `serve` flag and that the daemon's own
 * parser accepts the set, and returns the configuration it yields.
 *
 * @param args Arguments after `serve`.
 * @returns The effective configuration.
 */
export function checkServeArgs(args: readonly string[]): ServeConfig {
  for (const name of flagNames(args)) {
    assert.ok(name in SERVE_FLAGS, `"--${name}" is not a flag of pods-api serve`);
  }
  return parseServeConfig(args, { hostname: () => "test-node" });
}
