import type { OutcomeKindName } from "../model/model.js";

/** What a worker reports when it releases a lease. */
export interface LeaseOutcome {
  readonly kind: OutcomeKindName;
  readonly httpStatus?: number;
  readonly latencyMs?: number;
  /** For RATE_LIMITED: the target's Retry-After. */
  readonly retryAfterMs?: number;
  readonly bytes?: number;
  readonly detail?: string;
}

/** Where a lease came from: the broker, or this worker's local fallback pool. */
export type LeaseSource = "broker" | "fallback";

/** The proxy of a lease. */
export interface LeasedProxy {
  /** host:port */
  readonly id: string;
  /** Hand this to your HTTP client (may carry credentials). */
  readonly url: string;
  readonly tier: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly score: number;
}

/** Why a lease ended before its holder released it. */
export class LeaseLostError extends Error {
  override readonly name = "LeaseLostError";
  constructor(
    readonly leaseId: string,
    /** EXPIRED, REVOKED or NOT_FOUND from the broker; EXPIRED too when heartbeats failed until expiry. */
    readonly reason: "EXPIRED" | "REVOKED" | "NOT_FOUND",
  ) {
    super(`lease ${leaseId} lost: ${reason}`);
  }
}

/** What a backend needs to know of a lease. */
export interface LeaseRef {
  readonly id: string;
  readonly fencingToken: number;
  readonly domain: string;
  readonly proxy: { readonly id: string };
}

/** How a lease handle renews and releases (the broker stream, or the fallback pool). */
export interface LeaseBackend {
  /** Resolves with the new expiry, or rejects with `LeaseLostError` or a transport error. */
  renew(lease: LeaseRef, ttlMs: number): Promise<number>;
  /** Resolves when released (a lost lease resolves too: there is nothing left to release). */
  release(lease: LeaseRef, outcome: LeaseOutcome): Promise<void>;
}

/**
 * A leased proxy. While it is held, heartbeats renew it every ttl/3 (on whichever stream is open:
 * a broken stream does not end it). `signal` aborts when the lease is lost: the broker answered
 * lost, or renewals failed until its expiry passed — stop using the proxy then.
 */
export class Lease {
  readonly id: string;
  readonly proxy: LeasedProxy;
  /** The domain-key the lease is exclusive for. */
  readonly domain: string;
  readonly fencingToken: number;
  readonly source: LeaseSource;
  readonly sessionKey: string;
  /** The session's proxy changed: reset cookies. */
  readonly sessionRebound: boolean;
  private expire: number;
  private readonly abort = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private done = false;

  constructor(
    init: {
      id: string;
      proxy: LeasedProxy;
      domain: string;
      fencingToken: number;
      source: LeaseSource;
      sessionKey: string;
      sessionRebound: boolean;
      expireAt: number;
      ttlMs: number;
      heartbeat: boolean;
    },
    private readonly deps: { backend: LeaseBackend; clock: () => number; onEnd: (lease: Lease) => void },
  ) {
    this.id = init.id;
    this.proxy = init.proxy;
    this.domain = init.domain;
    this.fencingToken = init.fencingToken;
    this.source = init.source;
    this.sessionKey = init.sessionKey;
    this.sessionRebound = init.sessionRebound;
    this.expire = init.expireAt;
    this.ttlMs = init.ttlMs;
    if (init.heartbeat) this.schedule();
  }

  /** The lease's TTL (heartbeats extend it by this much). */
  readonly ttlMs: number;

  /** When the lease expires unless renewed (epoch ms). */
  get expireAt(): number {
    return this.expire;
  }

  /** Aborts when the lease is lost; `signal.reason` is a `LeaseLostError`. */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  /** True once released or lost. */
  get ended(): boolean {
    return this.done;
  }

  /** Renew now (heartbeats do this by themselves). Rejects with `LeaseLostError` when lost. */
  async renew(ttlMs = this.ttlMs): Promise<void> {
    if (this.done) throw this.abort.signal.reason instanceof LeaseLostError ? this.abort.signal.reason : new LeaseLostError(this.id, "NOT_FOUND");
    try {
      this.expire = await this.deps.backend.renew(this, ttlMs);
    } catch (err) {
      if (err instanceof LeaseLostError) this.lose(err);
      throw err;
    }
  }

  /** Release with what happened. Always ends the handle, even when the broker cannot be reached. */
  async release(outcome: LeaseOutcome): Promise<void> {
    if (this.done) return;
    this.end();
    await this.deps.backend.release(this, outcome);
  }

  private schedule(): void {
    const every = Math.max(10, Math.floor(this.ttlMs / 3));
    this.timer = setTimeout(() => void this.beat(), every);
    this.timer.unref();
  }

  private async beat(): Promise<void> {
    if (this.done) return;
    try {
      await this.renew();
    } catch (err) {
      if (err instanceof LeaseLostError) return;
      // Transport failure: keep trying until the expiry passes, then give the lease up.
      if (this.deps.clock() >= this.expire) {
        this.lose(new LeaseLostError(this.id, "EXPIRED"));
        return;
      }
    }
    if (!this.done) this.schedule();
  }

  private lose(err: LeaseLostError): void {
    if (this.done) return;
    this.end();
    this.abort.abort(err);
  }

  private end(): void {
    this.done = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.deps.onEnd(this);
  }
}
