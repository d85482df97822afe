/**
 * Internal to the in-memory engine: each worker's last two fallback claims (docs/spec.md §7), the
 * latest first. A claim that repeats the latest one's version replaces it (the worker sends a
 * claim again until a pong acknowledges it); another one pushes the latest down to second. A
 * process's first claim (`fresh`) replaces both: those before it were a predecessor's, not in use.
 * Bounded like the pool's other worker records: beyond `max` workers the least recently written go.
 */
import type { FallbackClaim } from "../../model/fallback-claim.js";

export class WorkerClaims {
  private readonly claims = new Map<string, readonly FallbackClaim[]>();

  constructor(private readonly max: number) {}

  /** Record `claim` as the latest of `workerId` (`fresh`: its process's first, see the top). */
  record(workerId: string, claim: FallbackClaim, fresh = false): void {
    const had = this.claims.get(workerId) ?? [];
    this.claims.delete(workerId);
    const latest = had[0];
    const alone = latest === undefined || (fresh && latest.version <= claim.version);
    this.claims.set(workerId, alone ? [claim] : latest.version === claim.version ? [claim, ...had.slice(1)] : [claim, latest]);
    if (this.claims.size > this.max) {
      const oldest = this.claims.keys().next().value;
      if (oldest !== undefined) this.claims.delete(oldest);
    }
  }

  /** Put back claims a store lost (its record kept if it has one). */
  remember(workerId: string, claims: readonly FallbackClaim[]): void {
    if (claims.length === 0 || this.claims.has(workerId)) return;
    this.claims.set(workerId, claims.slice(0, 2));
  }

  /** The claims of `workerId`, the latest first (none: empty). */
  of(workerId: string): readonly FallbackClaim[] {
    return this.claims.get(workerId) ?? [];
  }

  forget(workerId: string): void {
    this.claims.delete(workerId);
  }
}
