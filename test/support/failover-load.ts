/**
 * Test helper: a steady lease load on a broker through a Redis failover, and the checks every
 * failover test makes of it — one holder per (proxy, domain) at any time, fencing tokens
 * increasing in grant order, and no acquire sent after the kill granted within a lease TTL of it
 * (the promoted replica may have missed the last writes, so the broker must hold).
 */
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { OutcomeKind, type ProxyBroker } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type { ClientOf } from "@proxybroker/sdk/wire";

/** One lease as the load held it. */
export interface HeldLease {
  readonly pair: string;
  readonly proxy: string;
  readonly token: bigint;
  /** When its acquire was sent, when it was granted, when its release was answered (epoch ms). */
  readonly askedAt: number;
  readonly from: number;
  readonly to: number;
}

export interface FailoverLoad {
  readonly held: readonly HeldLease[];
  /** Epoch ms of every failed acquire (retried after 50 ms). */
  readonly failures: readonly number[];
  /** Grants whose acquire was sent after `t`. */
  grantsAskedAfter(t: number): readonly HeldLease[];
  stop(): Promise<void>;
}

/** `loops` workers (`w0`…), each acquiring on `d0.example`/`d1.example` in turn, holding 15 ms. */
export function startFailoverLoad(
  api: ClientOf<typeof ProxyBroker>,
  opts: { readonly loops: number; readonly ttlMs: number },
): FailoverLoad {
  const held: HeldLease[] = [];
  const failures: number[] = [];
  let stopped = false;
  const loop = async (i: number): Promise<void> => {
    for (let n = 0; !stopped; n++) {
      try {
        const askedAt = Date.now();
        const { lease } = await api.acquireLease({
          workerId: `w${i}`,
          requestId: `w${i}-${n}`,
          domain: `d${i % 2}.example`,
          ttl: durationFromMs(opts.ttlMs),
          maxWait: durationFromMs(300),
        });
        if (lease?.proxy === undefined) throw new Error("an acquire answered without a lease");
        const from = Date.now();
        await new Promise((r) => setTimeout(r, 15));
        await api
          .releaseLease({ leaseId: lease.leaseId, fencingToken: lease.fencingToken, outcome: { kind: OutcomeKind.SUCCESS } })
          .catch(() => undefined);
        held.push({
          pair: `${lease.proxy.id} ${lease.domain}`,
          proxy: lease.proxy.id,
          token: lease.fencingToken,
          askedAt,
          from,
          to: Date.now(),
        });
      } catch {
        failures.push(Date.now());
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  };
  const loops = Array.from({ length: opts.loops }, (_, i) => loop(i));
  return {
    held,
    failures,
    grantsAskedAfter: (t) => held.filter((h) => h.askedAt > t),
    async stop() {
      stopped = true;
      await Promise.all(loops);
    },
  };
}

/** Pairs held by two leases at once, or granted a token not above the one before (empty: none). */
export function exclusivityBreaches(held: readonly HeldLease[]): string[] {
  const byPair = new Map<string, HeldLease[]>();
  for (const h of held) byPair.set(h.pair, [...(byPair.get(h.pair) ?? []), h]);
  const out: string[] = [];
  for (const [pair, list] of byPair) {
    list.sort((a, b) => a.from - b.from);
    for (let i = 1; i < list.length; i++) {
      const [a, b] = [list[i - 1], list[i]];
      if (a === undefined || b === undefined) continue;
      if (b.token <= a.token) out.push(`${pair}: token ${b.token} after ${a.token}`);
      // 5 ms: the release's answer and the next grant's answer cross on loopback
      if (b.from < a.to - 5) out.push(`${pair}: granted at ${b.from} while held until ${a.to}`);
    }
  }
  return out;
}
