/**
 * The lease calls as the engine takes them: plain values, checked at the edge (the gRPC layer's
 * validate.ts builds them from requests; the engine never sees a wire message).
 */
import type { OutcomeInput } from "@proxybroker/sdk/model";

/** A checked acquire, before policy resolution. `ttlMs` 0 = the policy's default. */
export interface AcquireSpec {
  readonly requestId: string;
  readonly workerId: string;
  readonly pool: string;
  readonly host: string;
  readonly ttlMs: number;
  readonly maxWaitMs: number;
  readonly sessionKey: string;
  readonly tier: string;
  readonly labels: Readonly<Record<string, string>>;
  /** "" = any proxy; else only this one (host:port). */
  readonly proxyId: string;
  /** The worker keeps a fallback pool. */
  readonly fallbackPool: boolean;
  /** The worker stops using its broker leases as soon as the broker is unreachable. */
  readonly yieldsLeases?: boolean;
  /** The caller keeps to the TTL its lease carries (`AcquireParams.honorsTtl`). */
  readonly honorsTtl?: boolean;
  /** The name of the caller's token ("" = none): the identity recorded as last_used_by. */
  readonly identity?: string;
}

export interface RenewSpec {
  readonly leaseId: string;
  readonly fencingToken: number;
  readonly ttlMs: number;
  /** "" = not given. */
  readonly workerId: string;
  /** The caller keeps to the TTL the renewal answers (`RenewParams.honorsTtl`). */
  readonly honorsTtl?: boolean;
}

export interface ReleaseSpec {
  readonly leaseId: string;
  readonly fencingToken: number;
  readonly outcome: OutcomeInput;
  readonly next?: AcquireSpec;
}
