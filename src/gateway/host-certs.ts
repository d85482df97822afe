import { generateKeyPairSync, randomBytes } from "node:crypto";
import { isIP } from "node:net";
import { createSecureContext } from "node:tls";
import type { SecureContext } from "node:tls";
import forge from "node-forge";

/** Host certificates kept at most (the least recently used go first). */
const MAX_HOSTS = 2_000;
/** A host certificate's validity, back-dated by a day against clock skew. */
const VALID_DAYS = 30;

/**
 * Certificates for the hosts of intercepted tunnels, signed by the operator's CA
 * (`GATEWAY_CA_CERT_FILE`, `GATEWAY_CA_KEY_FILE`). One key pair (made once, natively) serves every
 * host; each host gets its own certificate — a DNS or IP subject alternative name — signed on
 * first use and kept.
 */
export class HostCerts {
  private readonly caCert: forge.pki.Certificate;
  private readonly caKey: forge.pki.rsa.PrivateKey;
  private readonly keyPem: string;
  private readonly publicKey: forge.pki.rsa.PublicKey;
  private readonly contexts = new Map<string, SecureContext>();

  /** Throws when the PEMs are not an RSA CA certificate and its key. */
  constructor(caCertPem: string, caKeyPem: string) {
    this.caCert = forge.pki.certificateFromPem(caCertPem);
    this.caKey = forge.pki.privateKeyFromPem(caKeyPem) as forge.pki.rsa.PrivateKey;
    const pair = generateKeyPairSync("rsa", { modulusLength: 2048 });
    this.keyPem = pair.privateKey.export({ type: "pkcs8", format: "pem" }).toString();
    this.publicKey = forge.pki.publicKeyFromPem(
      pair.publicKey.export({ type: "spki", format: "pem" }).toString(),
    ) as forge.pki.rsa.PublicKey;
  }

  /** The TLS context for `host` (a name or an IP address). */
  contextFor(host: string): SecureContext {
    const key = host.toLowerCase();
    const known = this.contexts.get(key);
    if (known !== undefined) {
      // most recently used last
      this.contexts.delete(key);
      this.contexts.set(key, known);
      return known;
    }
    const context = createSecureContext({ key: this.keyPem, cert: this.sign(key) });
    this.contexts.set(key, context);
    if (this.contexts.size > MAX_HOSTS) {
      const oldest = this.contexts.keys().next().value;
      if (oldest !== undefined) this.contexts.delete(oldest);
    }
    return context;
  }

  private sign(host: string): string {
    const cert = forge.pki.createCertificate();
    cert.publicKey = this.publicKey;
    cert.serialNumber = `01${randomBytes(15).toString("hex")}`;
    const now = Date.now();
    cert.validity.notBefore = new Date(now - 86_400_000);
    cert.validity.notAfter = new Date(now + VALID_DAYS * 86_400_000);
    cert.setSubject([{ name: "commonName", value: host.slice(0, 64) }]);
    cert.setIssuer(this.caCert.subject.attributes);
    cert.setExtensions([
      { name: "basicConstraints", cA: false },
      { name: "keyUsage", digitalSignature: true, keyEncipherment: true },
      { name: "extKeyUsage", serverAuth: true },
      { name: "subjectAltName", altNames: [isIP(host) !== 0 ? { type: 7, ip: host } : { type: 2, value: host }] },
    ]);
    cert.sign(this.caKey, forge.md.sha256.create());
    return forge.pki.certificateToPem(cert);
  }
}
