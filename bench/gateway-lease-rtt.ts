/**
 * What one lease costs a client of the broker, measured apart from any proxying: the SDK (as
 * the gateway runs it) acquiring and releasing a lease on the latency pool's tinyproxy for the
 * latency host, one at a time, from the bench's own process. Compared with the gateway's
 * added latency, it says how much of it is the lease's round trips.
 */
import { ProxyBrokerClient } from "@proxybroker/sdk";
import { percentiles } from "./meter.js";

export interface LeaseRoundTrips {
  readonly cycles: number;
  readonly acquireP50Ms: number;
  readonly acquireP99Ms: number;
  readonly releaseP50Ms: number;
}

export interface LeaseRoundTripOptions {
  readonly brokerAddress: string;
  readonly pool: string;
  readonly url: string;
  readonly cycles: number;
  readonly warmup: number;
}

export async function leaseRoundTrips(o: LeaseRoundTripOptions): Promise<LeaseRoundTrips> {
  const client = new ProxyBrokerClient({ address: o.brokerAddress, pool: o.pool, workerId: "bench-gateway-lease-rtt" });
  const acquires: number[] = [];
  const releases: number[] = [];
  try {
    for (let i = 0; i < o.warmup + o.cycles; i++) {
      const started = performance.now();
      const lease = await client.acquire(o.url, { maxWaitMs: 1_000 });
      const leased = performance.now();
      await lease.release({ kind: "SUCCESS" });
      if (i < o.warmup) continue;
      acquires.push(leased - started);
      releases.push(performance.now() - leased);
    }
  } finally {
    await client.close();
  }
  const a = percentiles(acquires);
  return { cycles: o.cycles, acquireP50Ms: a.p50, acquireP99Ms: a.p99, releaseP50Ms: percentiles(releases).p50 };
}
