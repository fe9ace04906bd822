/**
 * What a simulated node is made from: its size, namespaces, churn rate,
 * seed and identity, checked before the node is built.
 *
 * @module
 */

import type { Clock } from "../../clock.ts";

/** The kinds of change `SimulatedNode.advanceTo()` applies. */
export const MUTATION_KINDS = [
  "create",
  "start",
  "restart",
  "crashLoop",
  "finish",
  "delete",
  "relabel",
] as const;

/** One of {@linkcode MUTATION_KINDS}. */
export type MutationKind = typeof MUTATION_KINDS[number];

/** Namespaces of the simulated cluster unless told otherwise. */
export const DEFAULT_NAMESPACES: readonly string[] = [
  "default",
  "kube-system",
  "monitoring",
  "payments",
  "ingress-nginx",
  "logging",
];

/** Options of `SimulatedNode`. */
export interface SimulatedNodeOptions {
  /** Drives churn and stamps every time in the pods. */
  clock: Clock;
  /** @default {"sim-node-1"} */
  nodeName?: string;
  /** Pods at start; churn keeps the count around it. @default {`--simulate-pods`'s} */
  pods?: number;
  /** @default {DEFAULT_NAMESPACES} */
  namespaces?: readonly string[];
  /** Mutations per second of clock time; may be fractional or 0. @default {`--simulate-churn`'s} */
  churnPerSecond?: number;
  /** Seeds the generator: the same seed and clock give the same pods. @default {`--simulate-seed`'s} */
  seed?: number;
  /** The node's IP (`status.hostIP`, and the pod IP of host-network pods). @default {"10.0.0.10"} */
  hostIP?: string;
  /**
   * Most mutations one `SimulatedNode.advanceTo()` applies; beyond it
   * (a clock jump) the backlog is skipped and counted, not replayed.
   * @default {100000}
   */
  maxMutationsPerAdvance?: number;
}

const DNS_LABEL_REGEXP = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_SUBDOMAIN_REGEXP = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const IPV4_REGEXP = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/**
 * Checks the options of a simulated node.
 *
 * @param options The options.
 * @throws {RangeError} For a count, rate, limit or seed out of range, or no namespace.
 * @throws {TypeError} For a malformed node name, host IP or namespace.
 */
export function validateNodeOptions(options: SimulatedNodeOptions): void {
  const { pods, churnPerSecond, seed, nodeName, hostIP, namespaces, maxMutationsPerAdvance } =
    options;
  if (pods !== undefined && (!Number.isSafeInteger(pods) || pods < 0)) {
    throw new RangeError(`Pod count must be a non-negative integer: got "${pods}"`);
  }
  if (churnPerSecond !== undefined && !(Number.isFinite(churnPerSecond) && churnPerSecond >= 0)) {
    throw new RangeError(`Churn per second must be a finite number >= 0: got "${churnPerSecond}"`);
  }
  if (
    maxMutationsPerAdvance !== undefined &&
    (!Number.isSafeInteger(maxMutationsPerAdvance) || maxMutationsPerAdvance < 1)
  ) {
    throw new RangeError(
      `Max mutations per advance must be a positive integer: got "${maxMutationsPerAdvance}"`,
    );
  }
  if (seed !== undefined && !Number.isFinite(seed)) {
    throw new RangeError(`Seed must be a finite number: got "${seed}"`);
  }
  if (nodeName !== undefined && !DNS_SUBDOMAIN_REGEXP.test(nodeName)) {
    throw new TypeError(`Node name must be a DNS subdomain: got "${nodeName}"`);
  }
  if (hostIP !== undefined && !IPV4_REGEXP.test(hostIP)) {
    throw new TypeError(`Host IP must be an IPv4 address: got "${hostIP}"`);
  }
  if (namespaces !== undefined) {
    if (namespaces.length === 0) throw new RangeError("Namespaces must not be empty");
    for (const ns of namespaces) {
      if (!DNS_LABEL_REGEXP.test(ns)) {
        throw new TypeError(`Namespace must be a DNS label: got "${ns}"`);
      }
    }
    if (new Set(namespaces).size !== namespaces.length) {
      throw new TypeError(`Namespaces must be unique: got "${namespaces.join(",")}"`);
    }
  }
}
