/**
 * The domain-keys workers used lately, per pool, read from the store at most once a second: every
 * snapshot of every worker lists them, and the reservations read them every second too.
 */
import type { StoreWorkers } from "@proxybroker/sdk/engine";
import type { DomainUse } from "@proxybroker/sdk/model";

/** How long a read serves. */
const FRESH_MS = 1_000;

export class DomainUseCache {
  private readonly reads = new Map<string, { readonly at: number; readonly uses: Promise<readonly DomainUse[]> }>();

  constructor(
    private readonly opts: {
      readonly store: StoreWorkers;
      /** How long a use is listed after its last lease (0: none is recorded). */
      readonly windowMs: number;
      readonly clock: () => number;
    },
  ) {}

  /** How long a use is listed after its last lease (0: none is recorded). */
  get windowMs(): number {
    return this.opts.windowMs;
  }

  /** The pool's uses listed now (a failed read is not kept). */
  of(pool: string): Promise<readonly DomainUse[]> {
    if (this.opts.windowMs <= 0) return Promise.resolve([]);
    const now = this.opts.clock();
    const kept = this.reads.get(pool);
    if (kept !== undefined && now - kept.at < FRESH_MS) return kept.uses;
    const uses = this.opts.store.domainUses(pool, now - this.opts.windowMs);
    this.reads.set(pool, { at: now, uses });
    uses.catch(() => {
      if (this.reads.get(pool)?.uses === uses) this.reads.delete(pool);
    });
    return uses;
  }
}
