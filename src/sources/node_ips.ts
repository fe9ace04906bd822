/**
 * The node's own addresses, reported as a pod's `status.hostIP(s)`.
 *
 * @module
 */

/**
 * Picks the node's IPs: the configured ones, else the first non-loopback
 * IPv4 and IPv6 addresses of the host's interfaces.
 *
 * @param configured Addresses from `--node-ip`.
 * @returns One or two addresses, or none when nothing fits.
 */
export function nodeIPs(configured: readonly string[]): string[] {
  if (configured.length > 0) return [...configured];
  let interfaces: Deno.NetworkInterfaceInfo[];
  try {
    interfaces = Deno.networkInterfaces();
  } catch {
    return [];
  }
  const usable = interfaces.filter((i) =>
    !i.address.startsWith("127.") && i.address !== "::1" && !i.address.startsWith("fe80:") &&
    !i.name.startsWith("lo") && !i.name.startsWith("cni") && !i.name.startsWith("veth") &&
    !i.name.startsWith("docker") && !i.name.startsWith("pods-api")
  );
  const v4 = usable.find((i) => i.family === "IPv4");
  const v6 = usable.find((i) => i.family === "IPv6");
  return [v4, v6].filter((i) => i !== undefined).map((i) => i.address);
}
