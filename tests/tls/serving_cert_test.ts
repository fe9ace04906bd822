// The HTTP API's self-signed serving certificate: made once, kept, made
// again only when it would expire or misses a name; read and verified by
// OpenSSL in strict mode; and the kubeconfig that trusts it.
import assert from "node:assert/strict";
import { kubeconfigCommand } from "../../src/client/kubeconfig.ts";
import {
  ensureServingCert,
  fromPem,
  readCertificate,
  RENEW_BEFORE_MS,
  SERVING_CERT_VALIDITY_MS,
} from "../../src/tls/mod.ts";
import { ipOctets, normalizeIp } from "../../src/tls/certificate.ts";
import { readDer, readX509Time, x509Time } from "../../src/tls/der.ts";
import { parse as parseYaml } from "yaml";
import { makePki } from "../sources/kubelet/_pki.ts";
import { startHarness } from "../_support/daemon_harness.ts";

const T0 = Date.UTC(2026, 5, 1);

async function openssl(args: string[], cwd: string): Promise<string> {
  const r = await new Deno.Command("openssl", { args, cwd, stdout: "piped", stderr: "piped" })
    .output();
  const d = new TextDecoder();
  assert.equal(r.code, 0, d.decode(r.stderr));
  return d.decode(r.stdout);
}

Deno.test("a made certificate verifies under OpenSSL's strict checks and names the hosts", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const made = await ensureServingCert({
      dir: `${dir}/pki`,
      hosts: ["node-1", "10.0.0.5", "[fd00::1]", "0.0.0.0"],
      now: Date.now(),
    });
    assert.match(made.made!, /none/);
    await openssl(
      [
        "verify",
        "-x509_strict",
        "-purpose",
        "sslserver",
        "-CAfile",
        "pods-api-http-ca.crt",
        "pods-api-http.crt",
      ],
      `${dir}/pki`,
    );
    const text = await openssl([
      "x509",
      "-in",
      "pods-api-http.crt",
      "-noout",
      "-ext",
      "subjectAltName",
    ], `${dir}/pki`);
    for (
      const name of ["DNS:localhost", "DNS:node-1", "IP Address:127.0.0.1", "IP Address:10.0.0.5"]
    ) {
      assert.ok(text.includes(name), `${name} in ${text}`);
    }
    assert.match(text, /IP Address:FD00:0:0:0:0:0:0:1/i);
    assert.doesNotMatch(text, /0\.0\.0\.0/, "a wildcard bind is no name");
    // The key matches the certificate.
    const fromKey = await openssl(["pkey", "-in", "pods-api-http.key", "-pubout"], `${dir}/pki`);
    const fromCert = await openssl(
      ["x509", "-in", "pods-api-http.crt", "-noout", "-pubkey"],
      `${dir}/pki`,
    );
    assert.equal(fromKey, fromCert);
    assert.equal((await Deno.stat(`${dir}/pki/pods-api-http.key`)).mode! & 0o777, 0o600);
    assert.equal((await Deno.stat(`${dir}/pki`)).mode! & 0o777, 0o700);
    const ca = readCertificate(fromPem(await Deno.readTextFile(made.caFile), "CERTIFICATE")[0]!);
    assert.equal(ca.ca, true);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a kept certificate is used again until it nears expiry or misses a name", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const first = await ensureServingCert({ dir, hosts: ["127.0.0.1"], now: T0 });
    const again = await ensureServingCert({ dir, hosts: ["127.0.0.1", "::1"], now: T0 + 3600_000 });
    assert.equal(again.made, undefined);
    assert.equal(again.cert, first.cert);
    assert.equal(again.key, first.key);
    const info = readCertificate(fromPem(first.cert, "CERTIFICATE")[0]!);
    assert.equal(info.notAfter, T0 + SERVING_CERT_VALIDITY_MS);
    assert.equal(info.ca, false);
    const late = info.notAfter - RENEW_BEFORE_MS;
    const stillKept = await ensureServingCert({ dir, hosts: [], now: late - 1000 });
    assert.equal(stillKept.made, undefined);
    const renewed = await ensureServingCert({ dir, hosts: [], now: late });
    assert.match(renewed.made!, /expires/);
    assert.notEqual(renewed.cert, first.cert);
    const moved = await ensureServingCert({ dir, hosts: ["192.168.7.7"], now: late });
    assert.match(moved.made!, /does not name 192\.168\.7\.7/);
    await Deno.writeTextFile(`${dir}/pods-api-http.crt`, "garbage");
    const broken = await ensureServingCert({ dir, hosts: [], now: late });
    assert.match(broken.made!, /holds no certificate/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("readCertificate reads what OpenSSL wrote", async () => {
  await using pki = await makePki();
  const der = fromPem(pki.serverCert, "CERTIFICATE")[0]!;
  const info = readCertificate(der);
  const end = await openssl(["x509", "-noout", "-enddate", "-in", "server.crt"], pki.dir);
  assert.equal(info.notAfter, Date.parse(end.trim().replace("notAfter=", "")));
  assert.ok(info.ipAddresses.includes("127.0.0.1"), JSON.stringify(info));
  assert.ok(info.dnsNames.includes("localhost"));
});

Deno.test("DER times and IP addresses round-trip", () => {
  for (
    const ms of [Date.UTC(1999, 11, 31, 23, 59, 59), Date.UTC(2049, 0, 1), Date.UTC(2050, 0, 1)]
  ) {
    const node = readDer(x509Time(ms));
    assert.equal(node.tag, ms < Date.UTC(2050, 0, 1) ? 0x17 : 0x18);
    assert.equal(readX509Time(node), ms);
  }
  assert.deepEqual([...ipOctets("10.0.0.5")!], [10, 0, 0, 5]);
  assert.equal(ipOctets("300.0.0.1"), undefined);
  assert.equal(ipOctets("node-1"), undefined);
  assert.equal(ipOctets("1::2::3"), undefined);
  assert.equal(normalizeIp("fd00::1"), "fd00:0:0:0:0:0:0:1");
  assert.equal(normalizeIp("::"), "0:0:0:0:0:0:0:0");
  assert.equal(normalizeIp("1:2:3:4:5:6:7:8"), "1:2:3:4:5:6:7:8");
});

Deno.test("pods-api kubeconfig trusts the kept CA for a token, and says when there is none yet", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const read = (path: string) => Deno.readTextFileSync(path);
    const args = [
      "--http-bind-address",
      "127.0.0.1:9470",
      "--http-token-file",
      "/t",
      "--http-cert-dir",
      dir,
    ];
    assert.throws(
      () => kubeconfigCommand(args, read),
      /no serving certificate in --http-cert-dir ".*" yet/,
    );
    const kept = await ensureServingCert({ dir, hosts: [], now: Date.now() });
    const config = parseYaml(kubeconfigCommand(args, read)) as {
      clusters: Array<{ cluster: Record<string, string> }>;
      users: Array<{ user: Record<string, string> }>;
    };
    assert.equal(config.clusters[0]!.cluster.server, "https://127.0.0.1:9470");
    assert.equal(
      atob(config.clusters[0]!.cluster["certificate-authority-data"]!),
      read(kept.caFile),
    );
    assert.equal(config.users[0]!.user.tokenFile, "/t");
    // Without a token: plain HTTP, nothing to trust.
    const open = parseYaml(kubeconfigCommand(["--http-bind-address", "127.0.0.1:9470"], read)) as {
      clusters: Array<{ cluster: Record<string, string> }>;
    };
    assert.deepEqual(open.clusters[0]!.cluster, { server: "http://127.0.0.1:9470" });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a token with a certificate directory that cannot be written stops the start, naming the flag", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/token`, "t\n");
    await assert.rejects(
      startHarness({
        flags: [
          "--http-bind-address",
          "127.0.0.1:0",
          "--http-token-file",
          `${dir}/token`,
          "--http-cert-dir",
          "/proc/pods-api-cannot-be-here",
        ],
      }),
      /Cannot keep the HTTP API's serving certificate in --http-cert-dir "\/proc\/pods-api-cannot-be-here"/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
