/**
 * Which reported outcomes a worker may have seen in its fallback pool under its acknowledged claim
 * (docs/spec.md §7, §8). A report (ReportOutcomes) on a pair the store does not record the worker
 * as holding applies only when a claim of the worker names the pair: one of its last two in the
 * store, or one the broker saw lately (ClaimMemory: a worker back from fallback may have sent
 * newer claims since, or the store lost them), whose key for the pair's domain-key ended at most
 * the report window ago, and names it whole, or with the worker's rendezvous share over the
 * claim's members (cut by exit, and without exits, as the broker reserves it:
 * src/lease/reservations.ts) holding the proxy. What is read from the store is kept a moment per
 * pool, so a flood of reports costs the store one read of the workers a second, and one listing
 * of the proxies every ten seconds, at most.
 */
import { groupKeys, shareOf } from "@proxybroker/sdk/model";
import type { FallbackClaim } from "@proxybroker/sdk/model";
import type { StoreProxies, StoreWorkers } from "@proxybroker/sdk/engine";
import type { ClaimMemory } from "../lease/claim-memory.js";

export interface ReportClaimsOptions {
  readonly store: StoreProxies & StoreWorkers;
  readonly clock: () => number;
  /** The claims seen lately (a claimed key counts for its grace after its `untilMs`). */
  readonly memory: ClaimMemory;
  /** Workers last seen longer ago than this are not read (a worker in fallback is not seen). */
  readonly seenWithinMs: number;
}

/** A pair a report names. */
export interface ReportedPair {
  readonly proxyId: string;
  readonly domainKey: string;
}

/** How long the workers' claims, and the proxies' exits, read from the store are used. */
const CLAIMS_MS = 1_000;
const EXITS_MS = 10_000;
/** Pools whose reads are kept at most (beyond: all are dropped). */
const MAX_POOLS = 256;
/** Proxies listed per page. */
const PAGE = 1_000;

interface Kept<T> {
  readonly at: number;
  readonly value: Promise<T>;
}

export class ReportClaims {
  private readonly claims = new Map<string, Kept<void>>();
  private readonly exits = new Map<string, Kept<ReadonlyMap<string, string>>>();

  constructor(private readonly opts: ReportClaimsOptions) {}

  /** A claim this broker just stored and acknowledged (a ping): known at once, whatever the store does next. */
  acknowledged(pool: string, workerId: string, claim: FallbackClaim): void {
    const now = this.opts.clock();
    this.opts.memory.note(pool, [{ workerId, lastSeenAt: now, fallbackPoolAt: now, claims: [claim] }], now);
  }

  /** For each of `pairs`, whether `workerId`'s claims name it (see the top). */
  async claimed(pool: string, workerId: string, pairs: readonly ReportedPair[]): Promise<boolean[]> {
    const out = pairs.map(() => false);
    if (workerId === "" || pairs.length === 0) return out;
    await this.read(this.claims, pool, CLAIMS_MS, () => this.readClaims(pool));
    const now = this.opts.clock();
    const claims = this.opts.memory.of(pool, workerId, now);
    if (claims.length === 0) return out;
    let groups: ReadonlyMap<string, string> | undefined;
    for (const claim of claims) {
      const keys = new Map(claim.keys.map((k) => [k.domainKey, k.whole]));
      const shared: number[] = [];
      pairs.forEach((p, i) => {
        const whole = keys.get(p.domainKey);
        if (whole === true) out[i] = true;
        else if (whole === false && !out[i]) shared.push(i);
      });
      if (shared.length === 0) continue;
      groups ??= await this.read(this.exits, pool, EXITS_MS, () => this.readGroups(pool));
      // the share by exit group (what the worker's fallback pool cut) and by id (what it cut
      // before exits were known): the broker reserves both for it
      const asked = shared.flatMap((i) => [pairs[i]!.proxyId, groups?.get(pairs[i]!.proxyId) ?? pairs[i]!.proxyId]);
      const owned = new Set(shareOf(asked, claim.members, workerId));
      for (const i of shared) {
        const id = pairs[i]!.proxyId;
        if (owned.has(id) || owned.has(groups.get(id) ?? id)) out[i] = true;
      }
    }
    return out;
  }

  private async read<T>(cache: Map<string, Kept<T>>, pool: string, keepMs: number, load: () => Promise<T>): Promise<T> {
    const now = this.opts.clock();
    const kept = cache.get(pool);
    if (kept !== undefined && now - kept.at < keepMs) return kept.value;
    if (cache.size >= MAX_POOLS) cache.clear();
    const value = load();
    cache.set(pool, { at: now, value });
    // a failed read is not kept
    value.catch(() => {
      if (cache.get(pool)?.value === value) cache.delete(pool);
    });
    return value;
  }

  private async readClaims(pool: string): Promise<void> {
    const now = this.opts.clock();
    this.opts.memory.note(pool, await this.opts.store.liveWorkers(pool, now - this.opts.seenWithinMs, { claims: true }), now);
  }

  /** Proxy id → the key of its exit group (G9; its own id when alone on its exit). */
  private async readGroups(pool: string): Promise<ReadonlyMap<string, string>> {
    const members: { id: string; exitIp: string }[] = [];
    for (let after = ""; ; ) {
      const page = await this.opts.store.listProxies(pool, { size: PAGE, after });
      for (const p of page.proxies) members.push({ id: p.id, exitIp: p.exitIp });
      if (page.next === "") return groupKeys(members);
      after = page.next;
    }
  }
}
