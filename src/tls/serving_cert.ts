/**
 * The HTTP API's own serving certificate, as the kubelet keeps one in its
 * `--cert-dir` when it is given none: a CA made for the purpose signs a
 * serving certificate for the names clients use; both are written to a
 * directory and kept across restarts, so a kubeconfig that trusts the CA
 * keeps working. The CA's private key is never written: nothing else can be
 * signed with it. A kept certificate is made again when it expires within
 * {@linkcode RENEW_BEFORE_MS} or no longer names a host it must.
 *
 * @module
 */

import {
  EC_KEY_ALGORITHM,
  fromPem,
  issueCertificate,
  keyIdentifier,
  normalizeIp,
  readCertificate,
  toPem,
} from "./certificate.ts";

/** The files in the certificate directory. */
export const SERVING_CERT_FILES = {
  /** The serving certificate followed by the CA's: what the server presents. */
  cert: "pods-api-http.crt",
  /** The serving certificate's private key (mode 0600). */
  key: "pods-api-http.key",
  /** The CA certificate clients trust (`pods-api kubeconfig` embeds it). */
  ca: "pods-api-http-ca.crt",
} as const;

/** How long a made certificate is valid, as the kubelet's: one year. */
export const SERVING_CERT_VALIDITY_MS = 365 * 24 * 3600_000;
/** A kept certificate expiring sooner than this is made again at start. */
export const RENEW_BEFORE_MS = 30 * 24 * 3600_000;
/** Names every made certificate carries: the loopback a local client uses. */
export const LOOPBACK_NAMES: readonly string[] = ["localhost", "127.0.0.1", "::1"];

/** Options of {@linkcode ensureServingCert}. */
export interface ServingCertOptions {
  /** The directory; created (0700) when missing. */
  readonly dir: string;
  /** Host names and addresses the certificate must name, besides {@linkcode LOOPBACK_NAMES}. */
  readonly hosts: readonly string[];
  /** Milliseconds since the epoch. */
  readonly now: number;
}

/** The certificate in use. */
export interface ServingCert {
  /** PEM: the serving certificate and the CA's. */
  readonly cert: string;
  /** PEM PKCS #8. */
  readonly key: string;
  readonly caFile: string;
  /** Why a new one was made; `undefined` when the kept one was used. */
  readonly made: string | undefined;
}

/**
 * The certificate directory's CA file.
 *
 * @param dir The directory.
 * @returns Its path.
 */
export function servingCaFile(dir: string): string {
  return `${dir.replace(/\/+$/, "")}/${SERVING_CERT_FILES.ca}`;
}

function hostsOf(hosts: readonly string[]): string[] {
  const out = new Set(LOOPBACK_NAMES);
  for (const h of hosts) {
    const host = h.trim().toLowerCase();
    // A wildcard bind is no name a client connects to.
    if (host === "" || host === "0.0.0.0" || host === "::" || host === "[::]") continue;
    out.add(host.replace(/^\[(.*)\]$/, "$1"));
  }
  return [...out];
}

async function readIfThere(path: string): Promise<string | undefined> {
  try {
    return await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
}

/** Why the kept files cannot be used, or `undefined` when they can. */
function unfit(cert: string, hosts: readonly string[], now: number): string | undefined {
  let info;
  try {
    const der = fromPem(cert, "CERTIFICATE")[0];
    if (der === undefined) return "the kept certificate file holds no certificate";
    info = readCertificate(der);
  } catch (e) {
    return `the kept certificate cannot be read (${(e as Error).message})`;
  }
  if (info.notAfter - RENEW_BEFORE_MS <= now) {
    return `the kept certificate expires ${new Date(info.notAfter).toISOString()}`;
  }
  for (const host of hosts) {
    const ip = normalizeIp(host);
    const named = ip === undefined ? info.dnsNames.includes(host) : info.ipAddresses.includes(ip);
    if (!named) return `the kept certificate does not name ${host}`;
  }
  return undefined;
}

async function writeAtomically(path: string, text: string, mode: number): Promise<void> {
  const tmp = `${path}.tmp-${crypto.randomUUID().slice(0, 8)}`;
  try {
    await Deno.writeTextFile(tmp, text, { mode });
    await Deno.chmod(tmp, mode);
    await Deno.rename(tmp, path);
  } catch (e) {
    await Deno.remove(tmp).catch(() => {});
    throw e;
  }
}

/**
 * Uses the kept certificate in `dir`, or makes and keeps a new one.
 *
 * @example Usage
 * ```ts
 * import { ensureServingCert } from "./serving_cert.ts";
 * const dir = await Deno.makeTempDir();
 * const { cert, key } = await ensureServingCert({ dir, hosts: ["127.0.0.1"], now: Date.now() });
 * ```
 *
 * @param options Directory, names and time.
 * @returns The PEM texts and whether they were made now.
 * @throws {Error} When the directory cannot be read or written.
 */
export async function ensureServingCert(options: ServingCertOptions): Promise<ServingCert> {
  const dir = options.dir.replace(/\/+$/, "");
  const hosts = hostsOf(options.hosts);
  const paths = {
    cert: `${dir}/${SERVING_CERT_FILES.cert}`,
    key: `${dir}/${SERVING_CERT_FILES.key}`,
    caFile: servingCaFile(dir),
  };
  const [cert, key, ca] = await Promise.all(
    [paths.cert, paths.key, paths.caFile].map(readIfThere),
  );
  let made: string;
  if (cert === undefined || key === undefined || ca === undefined) {
    made = `there is none in ${dir} yet`;
  } else {
    const why = unfit(cert, hosts, options.now);
    if (why === undefined) return { cert, key, caFile: paths.caFile, made: undefined };
    made = why;
  }
  const fresh = await makeServingCert(hosts, options.now);
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  // The CA last: a kubeconfig never trusts a CA whose certificate is not in place.
  await writeAtomically(paths.key, fresh.key, 0o600);
  await writeAtomically(paths.cert, fresh.cert, 0o644);
  await writeAtomically(paths.caFile, fresh.ca, 0o644);
  return { cert: fresh.cert, key: fresh.key, caFile: paths.caFile, made };
}

async function makeServingCert(
  hosts: readonly string[],
  now: number,
): Promise<{ cert: string; key: string; ca: string }> {
  const notBefore = now - 5 * 60_000;
  const notAfter = now + SERVING_CERT_VALIDITY_MS;
  const caKeys = await crypto.subtle.generateKey(EC_KEY_ALGORITHM, false, ["sign", "verify"]);
  const caName = `pods-api-http-ca@${Math.floor(now / 1000)}`;
  const caDer = await issueCertificate(
    { commonName: caName, publicKey: caKeys.publicKey, notBefore, notAfter, ca: true },
    { selfKey: caKeys.privateKey },
  );
  const keys = await crypto.subtle.generateKey(EC_KEY_ALGORITHM, true, ["sign", "verify"]);
  const ipAddresses = hosts.filter((h) => normalizeIp(h) !== undefined);
  const dnsNames = hosts.filter((h) => normalizeIp(h) === undefined);
  const leafDer = await issueCertificate(
    {
      commonName: `pods-api-http@${Math.floor(now / 1000)}`,
      publicKey: keys.publicKey,
      notBefore,
      notAfter,
      ca: false,
      dnsNames,
      ipAddresses,
    },
    {
      commonName: caName,
      privateKey: caKeys.privateKey,
      keyId: await keyIdentifier(caKeys.publicKey),
    },
  );
  const pkcs8 = new Uint8Array(await crypto.subtle.exportKey("pkcs8", keys.privateKey));
  const ca = toPem("CERTIFICATE", caDer);
  return { cert: toPem("CERTIFICATE", leafDer) + ca, key: toPem("PRIVATE KEY", pkcs8), ca };
}
