/**
 * Test helper: a throw-away certificate authority made with `openssl` at run time, with a server
 * certificate for 127.0.0.1 / localhost and a client certificate, all PEM files in a temp folder.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface TestCerts {
  readonly dir: string;
  readonly caFile: string;
  readonly serverCertFile: string;
  readonly serverKeyFile: string;
  readonly clientCertFile: string;
  readonly clientKeyFile: string;
  /** Read one of the files. */
  read(file: string): Promise<Buffer>;
}

async function openssl(args: readonly string[], cwd: string): Promise<void> {
  await run("openssl", [...args], { cwd });
}

/** A certificate `<name>.pem` with its key `<name>.key` in `dir`, signed by the CA there (`ext`: its extensions). */
export async function leaf(dir: string, name: string, subject: string, ext: string): Promise<void> {
  await writeFile(join(dir, `${name}.ext`), ext);
  await openssl(["req", "-newkey", "rsa:2048", "-nodes", "-keyout", `${name}.key`, "-subj", subject, "-out", `${name}.csr`], dir);
  await openssl(
    [
      "x509",
      "-req",
      "-in",
      `${name}.csr`,
      "-CA",
      "ca.pem",
      "-CAkey",
      "ca.key",
      "-CAcreateserial",
      "-days",
      "2",
      "-out",
      `${name}.pem`,
      "-extfile",
      `${name}.ext`,
    ],
    dir,
  );
}

/** A CA (`name` in its subject) with a server and a client certificate. */
export async function makeCerts(name = "proxybroker-test-ca"): Promise<TestCerts> {
  const dir = await mkdtemp(join(tmpdir(), "pb-certs-"));
  await openssl(
    ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", `/CN=${name}`],
    dir,
  );
  await leaf(dir, "server", "/CN=localhost", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n");
  await leaf(dir, "client", "/CN=worker-1", "extendedKeyUsage=clientAuth\n");
  return {
    dir,
    caFile: join(dir, "ca.pem"),
    serverCertFile: join(dir, "server.pem"),
    serverKeyFile: join(dir, "server.key"),
    clientCertFile: join(dir, "client.pem"),
    clientKeyFile: join(dir, "client.key"),
    read: (file) => readFile(file),
  };
}
