import { hostFromDomain, hostFromUrl } from "../model/domain-key.js";
import type { AcquireRequest, BrokerBackend } from "./broker-backend.js";
import type { FallbackBackend } from "./fallback-backend.js";
import type { Lease, LeaseBackend } from "./lease.js";
import type { PacedPair } from "../fallback/index.js";

/**
 * The two switches of a client between the broker and its fallback pool (docs/spec.md §7), so
 * that fallback leases and broker leases never overlap:
 *
 * - entering fallback, a broker lease still held (its request may be in flight) keeps its proxy
 *   busy in the fallback pool when the proxy is in this worker's share, and is given up (its
 *   signal aborts) when it is not: another worker's fallback pool owns that proxy now;
 * - back to the broker, every fallback lease is handed over first — the broker is asked for that
 *   very (proxy, domain) pair; granted, the handle goes on as a broker lease; refused (another
 *   worker has it), the lease is given up — before any new broker lease is taken. And the pairs
 *   used in fallback whose pacing interval still runs are leased and given back at once, so the
 *   broker paces them from now rather than from their last broker use (no 429 after the switch).
 */
export interface SwitchDeps {
  readonly live: () => Iterable<Lease>;
  readonly broker: BrokerBackend;
  readonly brokerLeases: LeaseBackend;
  readonly fallback: FallbackBackend;
  readonly request: (lease: Lease) => AcquireRequest;
  /** A plain acquire request for a host (no session, the shortest TTL). */
  readonly requestFor: (host: string) => AcquireRequest;
  /** The pairs used in fallback whose pacing still runs (see `FallbackPool.pacedPairs`). */
  readonly pacedPairs: () => readonly PacedPair[];
}

/**
 * The TTL of a local lease that keeps a broker lease's proxy busy: it is never renewed, and must
 * not run out while the broker lease goes on (heartbeats may reach the broker again meanwhile).
 */
const ADOPTED_TTL_MS = 24 * 3_600_000;

/** Local leases that keep the proxies of broker leases busy in the fallback pool, by broker lease. */
export type Adopted = Map<Lease, { readonly id: string; readonly fencingToken: number }>;

/** Entering fallback: adopt the broker leases of this worker's share, give up the others. */
export async function enterFallback(deps: SwitchDeps, adopted: Adopted): Promise<void> {
  const held = [...deps.live()].filter((l) => l.source === "broker" && !l.ended && !adopted.has(l));
  await Promise.all(
    held.map(async (l) => {
      // held as long as the broker lease runs: it ends with it (endAdopted), whatever its TTL
      const local = await deps.fallback.adopt({ ...deps.request(l), ttlMs: ADOPTED_TTL_MS }, l.proxy.id).catch(() => undefined);
      if (local === undefined) {
        l.revoke("REVOKED");
        return;
      }
      if (l.ended) await deps.fallback.release({ id: local.leaseId, fencingToken: local.fencingToken }, { kind: "ABANDONED" }).catch(() => undefined);
      else adopted.set(l, { id: local.leaseId, fencingToken: local.fencingToken });
    }),
  );
}

/** A broker lease ended: the local lease that kept its proxy busy ends too (pacing counts from now). */
export function endAdopted(deps: Pick<SwitchDeps, "fallback">, adopted: Adopted, lease: Lease): void {
  const local = adopted.get(lease);
  if (local === undefined) return;
  adopted.delete(lease);
  void deps.fallback.release(local, { kind: "ABANDONED" }).catch(() => undefined);
}

/** Back to the broker: hand every fallback lease over, or give it up. */
export async function handOver(deps: SwitchDeps): Promise<void> {
  const fallbackLeases = [...deps.live()].filter((l) => l.source === "fallback" && !l.ended);
  await Promise.all(
    fallbackLeases.map(async (l) => {
      const local = { id: l.id, fencingToken: l.fencingToken };
      try {
        const g = await deps.broker.acquire({ ...deps.request(l), proxyId: l.proxy.id, maxWaitMs: 0 });
        l.handOver(
          { id: g.view.leaseId, fencingToken: g.view.fencingToken, source: "broker", expireAt: g.view.expireAt, backend: deps.brokerLeases },
          g.sentAt,
        );
      } catch {
        l.revoke("REVOKED");
      }
      await deps.fallback.release(local, { kind: "ABANDONED" }).catch(() => undefined);
    }),
  );
}

/**
 * Back to the broker: make it pace the pairs used in fallback from now — each is leased by proxy
 * id and released at once (ABANDONED: no score change). A pair the broker refuses is paced or
 * held there already.
 */
export async function handOverPacing(deps: SwitchDeps): Promise<number> {
  const pairs = deps.pacedPairs();
  const done = await Promise.all(
    pairs.map(async (p) => {
      try {
        const g = await deps.broker.acquire({ ...deps.requestFor(p.host), proxyId: p.proxyId, maxWaitMs: 0 });
        await deps.broker.release({ id: g.view.leaseId, fencingToken: g.view.fencingToken }, { kind: "ABANDONED" });
        return 1;
      } catch {
        return 0;
      }
    }),
  );
  return done.reduce<number>((a, b) => a + b, 0);
}

/** The host of a lease's target (a URL or a host). */
export function hostOf(target: string): string {
  return target.includes("://") ? hostFromUrl(target) : hostFromDomain(target);
}
