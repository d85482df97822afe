import { readFileSync } from "node:fs";
import * as grpc from "@grpc/grpc-js";

/** Where the server's TLS material is; all empty = plaintext. */
export interface TlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
  /** Set: clients must present a certificate signed by this CA (mTLS). */
  readonly clientCaFile: string;
}

/** Server credentials from the files: TLS, mTLS or plaintext. Throws when a file cannot be read. */
export function serverCredentials(files: TlsFiles): grpc.ServerCredentials {
  if (files.certFile === "") return grpc.ServerCredentials.createInsecure();
  const pair = { cert_chain: readFileSync(files.certFile), private_key: readFileSync(files.keyFile) };
  const clientCa = files.clientCaFile === "" ? null : readFileSync(files.clientCaFile);
  return grpc.ServerCredentials.createSsl(clientCa, [pair], clientCa !== null);
}

/** How the server is reached, for the start-up log. */
export function transportLine(files: TlsFiles): string {
  if (files.certFile === "") return "plaintext (no TLS_CERT_FILE)";
  return files.clientCaFile === "" ? "TLS" : "TLS, client certificates required (mTLS)";
}
