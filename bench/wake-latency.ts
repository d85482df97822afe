/**
 * Cross-replica wake-up latency: two broker replicas on one store, one proxy; a lease held through
 * replica A, an acquire waiting on replica B; the release through A, and how long until B's
 * waiter is granted (the release is announced by Redis; the poll is set to 10 s so that only the
 * announcement can be that fast). Then the other way round, `rounds` times.
 */
import * as grpc from "@grpc/grpc-js";
import { ProxyAdmin } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import { OutcomeKind, ProxyBroker } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { createClient } from "@proxybroker/sdk/wire";
import { brokerProcess } from "../test/support/broker-process.js";
import { StreamClient, granted } from "../test/support/stream-client.js";
import { percentiles } from "./meter.js";
import { pause } from "./pause.js";
import type { StoreTarget } from "./scenarios.js";

export interface WakeResult {
  readonly label: string;
  readonly samples: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

export async function measureWake(target: StoreTarget, label: string, rounds: number): Promise<WakeResult> {
  await target.flush();
  const brokers = await Promise.all(
    [0, 1].map(() => brokerProcess({ redisUrl: "", env: { ...target.env, WAIT_POLL_MS: "10000" }, testDefaults: false })),
  );
  await Promise.all(brokers.map((b) => b.start()));
  const channels = brokers.map((b) => new grpc.Client(b.address, grpc.credentials.createInsecure()));
  try {
    await createClient(ProxyAdmin, channels[0]!).addProxies({ proxies: [{ url: "http://10.0.0.1:3128" }] });
    const streams = channels.map((c) => new StreamClient(createClient(ProxyBroker, c)));
    const samples: number[] = [];
    let holder = 0;
    let lease = granted(await streams[0]!.acquire({ domain: "wake.example", workerId: "w0" }));
    // two unmeasured rounds first: each broker opens its subscriber connection on its first waiter
    for (let i = -2; i < rounds; i++) {
      const other = 1 - holder;
      const waiting = streams[other]!.acquire({ domain: "wake.example", workerId: `w${other}`, maxWaitMs: 5_000 });
      // the waiter is queued and its broker subscribed (the subscription lingers between rounds)
      await pause(i < 0 ? 500 : 20);
      const t = performance.now();
      await streams[holder]!.release(lease.leaseId, lease.fencingToken, OutcomeKind.SUCCESS);
      lease = granted(await waiting);
      if (i >= 0) samples.push(performance.now() - t);
      holder = other;
    }
    await streams[holder]!.release(lease.leaseId, lease.fencingToken, OutcomeKind.SUCCESS);
    for (const s of streams) s.end();
    const { p50, p99 } = percentiles(samples);
    return { label, samples: samples.length, p50Ms: p50, p99Ms: p99, maxMs: Math.max(...samples) };
  } finally {
    for (const c of channels) c.close();
    await Promise.all(brokers.map((b) => b.stop()));
  }
}
