/**
 * The fallback claims a broker saw its pools' workers make (docs/spec.md §7), kept while a report
 * of what a worker saw under one may still come: a worker replays its fallback outcomes once the
 * broker answers again, and by then it may have sent newer claims — or the store may have lost
 * them with its state. Fed with every read of the workers and their claims (the reservations'
 * read each tick, a report's own read) and each claim this broker acknowledges, a claim is kept
 * until `graceMs` after the last of its keys ended; at most `perWorker` claims per worker (the
 * newest versions; 4 by default, the store keeps 2) and `maxWorkers` workers per pool (the least
 * recently noted go first).
 */
import type { FallbackClaim, WorkerSeen } from "@proxybroker/sdk/model";

export interface ClaimMemoryOptions {
  readonly graceMs: number;
  readonly perWorker?: number;
  readonly maxWorkers?: number;
  /** Pools kept at most (beyond: the least recently noted go). */
  readonly maxPools?: number;
}

export class ClaimMemory {
  /** Pool → worker → its claims by version. */
  private readonly pools = new Map<string, Map<string, Map<number, FallbackClaim>>>();

  constructor(private readonly opts: ClaimMemoryOptions) {}

  /** Remember the claims of `seen` (workers of `pool` read from the store at `now`). */
  note(pool: string, seen: readonly WorkerSeen[], now: number): void {
    if (!seen.some((w) => (w.claims ?? []).length > 0)) return;
    let workers = this.pools.get(pool);
    if (workers === undefined) {
      if (this.pools.size >= (this.opts.maxPools ?? 256)) this.pools.delete(this.pools.keys().next().value ?? "");
      workers = new Map();
      this.pools.set(pool, workers);
    }
    for (const w of seen) {
      const claims = (w.claims ?? []).filter((c) => this.live(c, now));
      if (claims.length === 0) continue;
      let kept = workers.get(w.workerId);
      if (kept === undefined) {
        if (workers.size >= (this.opts.maxWorkers ?? 10_000)) workers.delete(workers.keys().next().value ?? "");
        kept = new Map();
      }
      workers.delete(w.workerId);
      workers.set(w.workerId, kept);
      for (const c of claims) if (!kept.has(c.version)) kept.set(c.version, c);
      for (const [v, c] of kept) if (!this.live(c, now)) kept.delete(v);
      const versions = [...kept.keys()].sort((a, b) => b - a);
      for (const v of versions.slice(this.opts.perWorker ?? 4)) kept.delete(v);
    }
  }

  /** The claims of `workerId` in `pool` kept at `now`, the newest first, each with the keys that ended `graceMs` ago at most. */
  of(pool: string, workerId: string, now: number): FallbackClaim[] {
    const kept = this.pools.get(pool)?.get(workerId);
    if (kept === undefined) return [];
    return [...kept.values()]
      .map((c) => ({ ...c, keys: c.keys.filter((k) => k.untilMs + this.opts.graceMs > now) }))
      .filter((c) => c.keys.length > 0)
      .sort((a, b) => b.version - a.version);
  }

  /** A claim a report may still come under: one of its keys ended at most `graceMs` ago. */
  private live(claim: FallbackClaim, now: number): boolean {
    return claim.keys.some((k) => k.untilMs + this.opts.graceMs > now);
  }
}
