/**
 * How the `proxybroker` admin commands reach a broker: `--address` (PROXYBROKER_ADDRESS, default
 * 127.0.0.1:50051), `--token` (PROXYBROKER_TOKEN: an admin token), `--tls-ca`, `--tls-cert`,
 * `--tls-key` (PEM files; TLS when any is given), and typed clients over one channel.
 */
import { readFileSync } from "node:fs";
import * as grpc from "@grpc/grpc-js";
import { ProxyAdmin } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import { ProxyBroker } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { createClient } from "@proxybroker/sdk/wire";
import { cliIO } from "./io.js";
import type { ClientOf } from "@proxybroker/sdk/wire";

/** The options every admin command takes. */
export interface ConnectionOptions {
  readonly address: string;
  readonly token?: string;
  readonly tlsCa?: string;
  readonly tlsCert?: string;
  readonly tlsKey?: string;
  readonly pool: string;
  readonly json?: boolean;
}

export interface Connection {
  readonly admin: ClientOf<typeof ProxyAdmin>;
  readonly broker: ClientOf<typeof ProxyBroker>;
  /** Call options with the token (and a deadline for unary calls). */
  callOptions(deadlineMs?: number): { metadata: grpc.Metadata; deadline?: Date };
  close(): void;
}

export function connect(o: ConnectionOptions): Connection {
  const tls = o.tlsCa !== undefined || o.tlsCert !== undefined || o.tlsKey !== undefined;
  const read = (f: string | undefined) => (f === undefined ? null : readFileSync(f));
  const credentials = tls ? grpc.credentials.createSsl(read(o.tlsCa), read(o.tlsKey), read(o.tlsCert)) : grpc.credentials.createInsecure();
  const channel = new grpc.Client(o.address, credentials);
  return {
    admin: createClient(ProxyAdmin, channel),
    broker: createClient(ProxyBroker, channel),
    callOptions(deadlineMs) {
      const metadata = new grpc.Metadata();
      const token = o.token ?? cliIO().env["PROXYBROKER_TOKEN"];
      if (token !== undefined && token !== "") metadata.set("authorization", `Bearer ${token}`);
      return deadlineMs === undefined ? { metadata } : { metadata, deadline: new Date(Date.now() + deadlineMs) };
    },
    close: () => channel.close(),
  };
}
