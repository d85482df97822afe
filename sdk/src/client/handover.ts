import { hostFromDomain, hostFromUrl } from "../model/domain-key.js";
import type { AcquireRequest, BrokerBackend } from "./broker-backend.js";
import { isBrokerFailure, LeaseLostError } from "./errors.js";
import type { FallbackBackend } from "./fallback-backend.js";
import type { Lease, LeaseBackend, LeaseOutcome, LeaseRef } from "./lease.js";
import type { OwedRecall, OwedRelease, OwedToBroker } from "./owed.js";
import type { PacedPair } from "../fallback/index.js";

/**
 * The two switches of a client between the broker and its fallback pool (docs/spec.md §7), so
 * that fallback leases and broker leases never overlap:
 *
 * - entering fallback, a broker lease still held (its request may be in flight) keeps its proxy
 *   busy in the fallback pool when the proxy is in this worker's share, and is given up (its
 *   signal aborts) when it is not: another worker's fallback pool owns that proxy now;
 * - back to the broker, the broker leases this worker stopped using meanwhile (their release did
 *   not arrive, or entering fallback gave them up) are released there first — one whose pair a
 *   fallback lease of this worker holds now is renewed instead and carries that lease on — so
 *   that the broker does not keep those pairs closed for the rest of their TTL; then every
 *   fallback lease is handed over — the broker is asked for that very (proxy, domain) pair;
 *   granted, the handle goes on as a broker lease; refused (another worker has it), the lease is
 *   given up — before any new broker lease is taken. And the pairs used in fallback whose pacing
 *   interval still runs are leased and given back at once, so the broker paces them from now
 *   rather than from their last broker use (no 429 after the switch).
 */
export interface SwitchDeps {
  /** The pool every lease of the client is in. */
  readonly pool: string;
  readonly live: () => Iterable<Lease>;
  readonly broker: BrokerBackend;
  readonly brokerLeases: LeaseBackend;
  readonly fallback: FallbackBackend;
  readonly request: (lease: Lease) => AcquireRequest;
  /** A plain acquire request for a host (no session, the shortest TTL). */
  readonly requestFor: (host: string) => AcquireRequest;
  /** The pairs used in fallback whose pacing still runs (see `FallbackPool.pacedPairs`). */
  readonly pacedPairs: () => readonly PacedPair[];
  /** Releases the broker has not heard yet, and acquires it never answered. */
  readonly owed: OwedToBroker;
  /** Keep an owed release's outcome for `ReportOutcomes` (its lease goes on, or cannot be owed). */
  readonly keepOutcome: (r: OwedRelease) => void;
  readonly monotonic: () => number;
  /** Epoch ms (an owed release's observation time). */
  readonly clock: () => number;
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
        owe(deps, l, { kind: "ABANDONED" });
        return;
      }
      if (l.ended)
        await deps.fallback.release({ id: local.leaseId, fencingToken: local.fencingToken }, { kind: "ABANDONED" }).catch(() => undefined);
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

/** A broker lease ended here without a release the broker heard: owe it (or keep its outcome). */
export function owe(deps: Pick<SwitchDeps, "owed" | "keepOutcome" | "pool" | "clock">, l: LeaseRef, outcome: LeaseOutcome): void {
  const r: OwedRelease = {
    kind: "release",
    leaseId: l.id,
    fencingToken: l.fencingToken,
    pool: deps.pool,
    proxyId: l.proxy.id,
    domainKey: l.domain,
    outcome,
    observedAt: deps.clock(),
  };
  if (!deps.owed.keep(r)) deps.keepOutcome(r);
}

/**
 * Back to the broker (or whenever it answers in broker mode): settle what is owed. An owed
 * release is released there: the pair is free and paced from now — this worker stopped using it
 * before, so nobody can overlap it, and a silent worker's share stays reserved as for any lease
 * that ends. An unanswered acquire is sent again under its request id: the lease it got, if any,
 * is given back. Either lease, when a fallback lease of this worker holds its pair now, carries
 * that fallback lease on instead (the pair never was free). Resolves with how many were settled;
 * the others (the broker unreachable again) stay owed.
 */
export async function settleOwed(deps: SwitchDeps): Promise<number> {
  const all = deps.owed.take();
  const settled = await Promise.all(all.map((o) => (o.kind === "release" ? settleRelease(deps, o) : settleRecall(deps, o))));
  all.forEach((o, i) => {
    if (settled[i] || deps.owed.keep(o)) return;
    if (o.kind === "release") deps.keepOutcome(o);
  });
  return settled.filter(Boolean).length;
}

/** The live fallback lease of this worker on a pair, if any. */
function fallbackHolder(deps: SwitchDeps, proxyId: string, domainKey: string): Lease | undefined {
  return [...deps.live()].find((l) => l.source === "fallback" && !l.ended && l.proxy.id === proxyId && l.domain === domainKey);
}

/**
 * A fallback lease goes on as the broker lease `ref` (expiring at `expireAt`, running `runsMs`
 * from `sentAt`, -1: not said); false when it ended meanwhile.
 */
async function carryOn(
  deps: SwitchDeps,
  holder: Lease,
  ref: { id: string; fencingToken: number },
  granted: { expireAt: number; sentAt: number; runsMs: number },
): Promise<boolean> {
  const local = { id: holder.id, fencingToken: holder.fencingToken };
  const identity = { ...ref, source: "broker" as const, expireAt: granted.expireAt, backend: deps.brokerLeases };
  if (!holder.handOver(identity, granted.sentAt, granted.runsMs)) return false;
  await deps.fallback.release(local, { kind: "ABANDONED" }).catch(() => undefined);
  return true;
}

async function settleRelease(deps: SwitchDeps, r: OwedRelease): Promise<boolean> {
  const ref = { id: r.leaseId, fencingToken: r.fencingToken };
  const holder = fallbackHolder(deps, r.proxyId, r.domainKey);
  if (holder !== undefined) {
    const sentAt = deps.monotonic();
    try {
      const renewed = await deps.broker.renew(ref, holder.ttlMs);
      if (await carryOn(deps, holder, ref, { expireAt: renewed.expireAt, sentAt, runsMs: renewed.ttlMs })) {
        deps.keepOutcome(r);
        return true;
      }
    } catch (err) {
      // lost meanwhile (expired): released below, the hand-over asks for the pair as usual
      if (!(err instanceof LeaseLostError)) return false;
    }
  }
  try {
    // a lease that expired meanwhile answers lost, and its outcome still counts
    await deps.broker.release(ref, r.outcome);
    return true;
  } catch {
    return false;
  }
}

/** The broker remembers a request id this long (docs/spec.md §5): a recall after it is no use. */
const RECALL_WINDOW_MS = 60_000;

async function settleRecall(deps: SwitchDeps, o: OwedRecall): Promise<boolean> {
  if (deps.clock() - o.sentAt >= RECALL_WINDOW_MS) return true;
  let g: Awaited<ReturnType<BrokerBackend["acquire"]>>;
  try {
    g = await deps.broker.acquire({ ...o.request, maxWaitMs: 0 }, o.requestId);
  } catch (err) {
    // denied: nothing held for it (a denial is not remembered, so this was decided anew)
    return !isBrokerFailure(err);
  }
  const ref = { id: g.view.leaseId, fencingToken: g.view.fencingToken };
  const holder = fallbackHolder(deps, g.view.proxy.id, g.view.domainKey);
  if (holder !== undefined && (await carryOn(deps, holder, ref, { expireAt: g.view.expireAt, sentAt: g.sentAt, runsMs: g.view.ttlMs })))
    return true;
  await deps.broker.release(ref, { kind: "ABANDONED" }).catch(() => undefined);
  return true;
}

/** Back to the broker: hand every fallback lease over, or give it up. */
export async function handOver(deps: SwitchDeps): Promise<void> {
  const fallbackLeases = [...deps.live()].filter((l) => l.source === "fallback" && !l.ended);
  await Promise.all(
    fallbackLeases.map(async (l) => {
      const local = { id: l.id, fencingToken: l.fencingToken };
      try {
        const g = await deps.broker.acquire({ ...deps.request(l), proxyId: l.proxy.id, maxWaitMs: 0 });
        const identity = { id: g.view.leaseId, fencingToken: g.view.fencingToken, source: "broker" as const, expireAt: g.view.expireAt };
        // released while the broker was asked: the grant goes back at once (paced from now), or
        // the pair would stay leased to nobody for a whole TTL
        if (!l.handOver({ ...identity, backend: deps.brokerLeases }, g.sentAt, g.view.ttlMs))
          await deps.broker.release(identity, { kind: "ABANDONED" }).catch(() => undefined);
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
