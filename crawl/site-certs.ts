/**
 * The certificates of the HTTPS mode (CRAWL_HTTPS): the test CA of test/support/certs.ts
 * (`makeCerts`) and one server certificate it signs for the sites' own addresses (127.0.1.x, IP
 * subject alternative names), which makeCerts's server certificate (127.0.0.1 and localhost only)
 * does not cover. The workers trust the CA (the sites in tunnel mode, the gateway's host
 * certificates in interception mode); the gateway signs with it and trusts it for the sites.
 */
import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { leaf, makeCerts } from "../test/support/certs.js";

export interface SiteCerts {
  /** The CA certificate (PEM file): what the workers and the gateway trust. */
  readonly caFile: string;
  /** The CA's RSA key (PEM file): the gateway signs its host certificates with it. */
  readonly caKeyFile: string;
  /** The sites' certificate and key (PEM). */
  readonly cert: Buffer;
  readonly key: Buffer;
  /** Delete the files. */
  remove(): Promise<void>;
}

/** A test CA and a certificate it signs for `addresses` (IP addresses), made with `openssl`. */
export async function makeSiteCerts(addresses: readonly string[]): Promise<SiteCerts> {
  const certs = await makeCerts("crawl-test-ca");
  const dir = certs.dir;
  await leaf(dir, "sites", "/CN=crawl-sites", `subjectAltName=${addresses.map((a) => `IP:${a}`).join(",")}\nextendedKeyUsage=serverAuth\n`);
  return {
    caFile: certs.caFile,
    // makeCerts keeps the CA's key beside its certificate (as the gateway tests read it)
    caKeyFile: join(dir, "ca.key"),
    cert: await readFile(join(dir, "sites.pem")),
    key: await readFile(join(dir, "sites.key")),
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}
