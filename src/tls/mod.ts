/**
 * TLS material made here: the HTTP API's self-signed serving certificate,
 * kept in a directory as the kubelet keeps its own (`serving_cert.ts`), on an
 * X.509 writer and reader (`certificate.ts`) over DER (`der.ts`).
 *
 * @module
 */

export {
  ensureServingCert,
  LOOPBACK_NAMES,
  RENEW_BEFORE_MS,
  SERVING_CERT_FILES,
  SERVING_CERT_VALIDITY_MS,
  servingCaFile,
  type ServingCert,
  type ServingCertOptions,
} from "./serving_cert.ts";
export { type CertificateInfo, fromPem, readCertificate } from "./certificate.ts";
