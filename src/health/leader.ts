/**
 * A leader lease held through the store: every `ttlMs / 3` the elector campaigns (takes the lease
 * when free, renews it when its own), so that exactly one broker replica leads, and a standby
 * takes over within one TTL after the leader dies. `onChange` is told of every change of this
 * replica's role, with the term (the fencing token of its writes) and the holder.
 */
import type { Campaign, StoreLeader } from "@proxybroker/sdk/engine";

export interface LeaderOptions {
  readonly store: StoreLeader;
  readonly name: string;
  /** This replica's id. */
  readonly owner: string;
  readonly ttlMs: number;
  readonly onChange?: (state: Campaign) => void;
  readonly onError?: (err: unknown) => void;
}

export class LeaderElector {
  private timer: NodeJS.Timeout | undefined;
  private state: Campaign = { leader: false, term: 0, holder: "", remainingMs: 0 };
  /** A campaign at the moment another holder's lease runs out. */
  private expiry: NodeJS.Timeout | undefined;
  private lastRenewedAt = 0;

  constructor(private readonly opts: LeaderOptions) {}

  /** Whether this replica leads now (a renewal older than the TTL counts as lost). */
  get leader(): boolean {
    return this.state.leader && Date.now() - this.lastRenewedAt < this.opts.ttlMs;
  }

  get term(): number {
    return this.state.term;
  }

  get holder(): string {
    return this.state.holder;
  }

  start(): void {
    if (this.timer !== undefined) return;
    void this.tick();
    this.timer = setInterval(() => void this.tick(), Math.max(50, Math.floor(this.opts.ttlMs / 3)));
    this.timer.unref();
  }

  /** Stop campaigning and give the lease up (a standby takes over at once). */
  async stop(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    if (this.expiry !== undefined) clearTimeout(this.expiry);
    this.timer = undefined;
    if (this.state.leader) await this.opts.store.resign(this.opts.name, this.opts.owner).catch(() => undefined);
    this.update({ leader: false, term: 0, holder: "", remainingMs: 0 });
  }

  private async tick(): Promise<void> {
    try {
      const c = await this.opts.store.campaign(this.opts.name, this.opts.owner, this.opts.ttlMs);
      if (c.leader) this.lastRenewedAt = Date.now();
      this.update(c);
      // another holder: campaign again the moment its lease would run out (not at the next tick)
      if (!c.leader && c.remainingMs > 0 && this.timer !== undefined) {
        if (this.expiry !== undefined) clearTimeout(this.expiry);
        this.expiry = setTimeout(() => void this.tick(), c.remainingMs + 5);
        this.expiry.unref();
      }
    } catch (err) {
      this.opts.onError?.(err);
      // the store is away: after a TTL without a renewal, this replica no longer leads
      if (this.state.leader && !this.leader) this.update({ leader: false, term: this.state.term, holder: "", remainingMs: 0 });
    }
  }

  private update(c: Campaign): void {
    const changed = c.leader !== this.state.leader || c.term !== this.state.term || c.holder !== this.state.holder;
    this.state = c;
    if (changed) this.opts.onChange?.(c);
  }
}
