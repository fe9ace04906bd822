/**
 * A throwaway PKI made with `openssl` for the fake kubelet: a CA, a serving
 * certificate for 127.0.0.1 and localhost signed by it, a client certificate
 * signed by it, and a self-signed certificate no client trusts.
 *
 * @module
 */

import { PEERS, requirePeer } from "../../_support/peers.ts";

/** Paths and PEM texts of the test PKI. */
export interface Pki extends AsyncDisposable {
  readonly dir: string;
  readonly caFile: string;
  readonly ca: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly clientCertFile: string;
  readonly clientKeyFile: string;
  /** A self-signed serving certificate (the kubelet's default when it makes its own). */
  readonly selfSignedCert: string;
  readonly selfSignedKey: string;
}

async function openssl(dir: string, args: string[]): Promise<void> {
  const { code, stderr } = await new Deno.Command("openssl", {
    args,
    cwd: dir,
    stdout: "null",
    stderr: "piped",
  }).output();
  if (code !== 0) {
    throw new Error(`openssl ${args[0]} failed: ${new TextDecoder().decode(stderr)}`);
  }
}

/**
 * Makes the PKI in a new temporary directory (removed on dispose).
 *
 * @returns The PKI.
 * @throws {Error} When openssl is missing, saying what to install (a test
 *   that needs certificates fails without them; it is never skipped).
 */
export async function makePki(): Promise<Pki> {
  requirePeer(PEERS.openssl).check();
  const dir = await Deno.makeTempDir({ prefix: "kubelet-pki-" });
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  await openssl(dir, [
    "req",
    "-x509",
    ...ec,
    "-keyout",
    "ca.key",
    "-out",
    "ca.crt",
    "-days",
    "2",
    "-subj",
    "/CN=test-kubelet-ca",
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign",
  ]);
  await Deno.writeTextFile(
    `${dir}/server.ext`,
    "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n",
  );
  await openssl(dir, [
    "req",
    ...ec,
    "-keyout",
    "server.key",
    "-out",
    "server.csr",
    "-subj",
    "/CN=node-1",
  ]);
  await openssl(dir, [
    "x509",
    "-req",
    "-in",
    "server.csr",
    "-CA",
    "ca.crt",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-out",
    "server.crt",
    "-days",
    "2",
    "-extfile",
    "server.ext",
  ]);
  await Deno.writeTextFile(
    `${dir}/client.ext`,
    "extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n",
  );
  await openssl(dir, [
    "req",
    ...ec,
    "-keyout",
    "client.key",
    "-out",
    "client.csr",
    "-subj",
    "/O=system:masters/CN=pods-api",
  ]);
  await openssl(dir, [
    "x509",
    "-req",
    "-in",
    "client.csr",
    "-CA",
    "ca.crt",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-out",
    "client.crt",
    "-days",
    "2",
    "-extfile",
    "client.ext",
  ]);
  await openssl(dir, [
    "req",
    "-x509",
    ...ec,
    "-keyout",
    "self.key",
    "-out",
    "self.crt",
    "-days",
    "2",
    "-subj",
    "/CN=node-1@1700000000",
    "-addext",
    "subjectAltName=IP:127.0.0.1,DNS:localhost",
  ]);
  const read = (name: string) => Deno.readTextFile(`${dir}/${name}`);
  return {
    dir,
    caFile: `${dir}/ca.crt`,
    ca: await read("ca.crt"),
    serverCert: await read("server.crt"),
    serverKey: await read("server.key"),
    clientCertFile: `${dir}/client.crt`,
    clientKeyFile: `${dir}/client.key`,
    selfSignedCert: await read("self.crt"),
    selfSignedKey: await read("self.key"),
    [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }),
  };
}
