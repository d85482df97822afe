/**
 * The stub worker's view of the broker replicas: one grpc-js channel and one generated
 * `ProxyBroker` client per address, and which one is in use. A replica that cannot serve
 * (UNAVAILABLE, no answer in time) is left for the next one: any replica can renew or release
 * any lease, and an acquire retried with the same request_id is idempotent in the store.
 */
import * as grpc from "@grpc/grpc-js";
import { ProxyBroker } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { createClient } from "@proxybroker/sdk/wire";
import type { ClientOf } from "@proxybroker/sdk/wire";

export type BrokerStub = ClientOf<typeof ProxyBroker>;

export class Replicas {
  private readonly channels: grpc.Client[];
  private readonly stubs: BrokerStub[];
  private index = 0;

  constructor(addresses: readonly string[]) {
    if (addresses.length === 0) throw new Error("no broker address");
    this.channels = addresses.map(
      (a) =>
        new grpc.Client(a, grpc.credentials.createInsecure(), {
          "grpc.keepalive_time_ms": 5_000,
          "grpc.keepalive_timeout_ms": 5_000,
          "grpc.keepalive_permit_without_calls": 1,
          "grpc.initial_reconnect_backoff_ms": 100,
          "grpc.max_reconnect_backoff_ms": 1_000,
        }),
    );
    this.stubs = this.channels.map((c) => createClient(ProxyBroker, c));
  }

  /** The replica in use. */
  get current(): BrokerStub {
    const s = this.stubs[this.index % this.stubs.length];
    if (s === undefined) throw new Error("no broker stub");
    return s;
  }

  /** Turn to the next replica. */
  next(): void {
    this.index = (this.index + 1) % this.stubs.length;
  }

  close(): void {
    for (const c of this.channels) c.close();
  }
}

/** The gRPC status code of a failed call (UNKNOWN for anything that is not a status error). */
export function codeOf(err: unknown): grpc.status {
  if (typeof err === "object" && err !== null && "code" in err && typeof err.code === "number") return err.code as grpc.status;
  return grpc.status.UNKNOWN;
}

/** A trailer of a failed call (e.g. `retry-after-ms`, `lost-reason`). */
export function trailerOf(err: unknown, key: string): string | undefined {
  if (typeof err !== "object" || err === null || !("metadata" in err) || !(err.metadata instanceof grpc.Metadata)) return undefined;
  const v = err.metadata.get(key)[0];
  return v === undefined ? undefined : String(v);
}

/** Whether the answer says the lease is gone (expired, held under another token, unknown). */
export function isLost(err: unknown): boolean {
  const c = codeOf(err);
  return c === grpc.status.ABORTED || c === grpc.status.NOT_FOUND;
}
