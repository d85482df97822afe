import type { OutcomeKindName } from "../model/model.js";
import { LeaseLostError } from "./errors.js";
import type { LeaseLostReason } from "./errors.js";

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

/** What a backend needs to know of a lease. */
export interface LeaseRef {
  readonly id: string;
  readonly fencingToken: number;
  readonly domain: string;
  readonly proxy: { readonly id: string };
}

/** A renewal's answer: the new expiry (the granting store's clock) and how long it runs from the renew. */
export interface Renewed {
  readonly expireAt: number;
  /** The TTL asked, or less (the broker ends it when a silent worker's claim on the pair holds). */
  readonly ttlMs: number;
}

/**
 * How long a grant or renewal asked for `askedMs` runs: what the broker said (`saidMs`, -1: an
 * older broker said nothing), never more than asked.
 */
export function runsFor(saidMs: number, askedMs: number): number {
  return saidMs >= 0 ? Math.min(saidMs, askedMs) : askedMs;
}

/** How a lease handle renews and releases (the broker stream, or the fallback pool). */
export interface LeaseBackend {
  /** Resolves with the new expiry, or rejects with `LeaseLostError` or a transport error. */
  renew(lease: LeaseRef, ttlMs: number): Promise<Renewed>;
  /** Resolves when released (a lost lease resolves too: there is nothing left to release). */
  release(lease: LeaseRef, outcome: LeaseOutcome): Promise<void>;
}

/** The lease a handle stands for: which store granted it, under which id and token. */
export interface LeaseIdentity {
  readonly id: string;
  readonly fencingToken: number;
  readonly source: LeaseSource;
  /** Expiry by the granting store's clock (epoch ms): for display only. */
  readonly expireAt: number;
  readonly backend: LeaseBackend;
}

/** How a handle measures its deadline. */
export interface LeaseClocks {
  /** Epoch ms (latencies, expiry display). */
  readonly clock: () => number;
  /** A monotonic clock in ms (deadlines: no dependence on the broker's or Redis's clock). */
  readonly monotonic: () => number;
}

/** What a handle tells its client. */
export interface LeaseHooks {
  /** The handle ended: released, or lost. */
  readonly onEnd: (lease: Lease) => void;
  /** The handle was lost: its signal has just aborted with `err`. */
  readonly onLost?: (lease: Lease, err: LeaseLostError) => void;
}

/**
 * The part of a TTL a worker gives up early: its deadline comes this long before the store's
 * expiry, so that it stops using the proxy before anyone else can be granted it, whatever the
 * network delay of the answer that set it.
 */
export function deadlineMargin(ttlMs: number): number {
  return Math.min(1_000, Math.max(20, Math.round(ttlMs * 0.1)));
}

/** The deadline of a lease that runs `runsMs` from `sentAt` (monotonic ms). */
function deadlineOf(sentAt: number, runsMs: number): number {
  return sentAt + runsMs - deadlineMargin(runsMs);
}

/**
 * A leased proxy. While it is held, heartbeats renew it every ttl/3 (on whichever stream is open:
 * a broken stream does not end it). Its deadline is kept on a monotonic clock from the moment the
 * acquire or the last confirmed renewal was *sent*, minus a margin: `signal` aborts at that
 * deadline unless a renewal confirmed the lease meanwhile, and when the broker answers that the
 * lease is lost — stop using the proxy then.
 */
export class Lease {
  readonly proxy: LeasedProxy;
  /** The domain-key the lease is exclusive for. */
  readonly domain: string;
  /** The target the lease was asked for (a URL or a host), for a hand-over to the broker. */
  readonly target: string;
  readonly sessionKey: string;
  /** The session's proxy changed: reset cookies. */
  readonly sessionRebound: boolean;
  /** The lease's TTL (heartbeats extend it by this much). */
  readonly ttlMs: number;
  /**
   * The broker let this worker keep the lease for more requests of its domain-key, one at a time,
   * while the pair is not paced (asked for with `reuse`; broker leases only). Stop sending
   * requests through it once `wanted`.
   */
  readonly reusable: boolean;
  /**
   * The broker does not know the pair's pacing (broker leases only): no domain policy names the
   * host and adaptive pacing learned no interval, so the pair's next grant may follow this
   * release at once, and only a RATE_LIMITED outcome released through the broker teaches it the
   * site's limit. A holder that cannot see the site's answers should space the pair's uses itself
   * (the gateway's CONNECT tunnels do). Also true for a retried acquire given its lease again.
   */
  readonly pacingUnknown: boolean;
  /** How long the grant runs from its acquire's sending: `ttlMs`, or less when the broker granted less. */
  readonly grantRunsMs: number;
  private isWanted = false;
  private readonly wantedBy = new Set<() => void>();
  private identity: LeaseIdentity;
  private deadline: number;
  private readonly abort = new AbortController();
  private beatTimer: NodeJS.Timeout | undefined;
  private deadlineTimer: NodeJS.Timeout | undefined;
  private done = false;

  constructor(
    init: {
      identity: LeaseIdentity;
      proxy: LeasedProxy;
      domain: string;
      target: string;
      sessionKey: string;
      sessionRebound: boolean;
      ttlMs: number;
      /**
       * How long this grant runs from `sentAt`, as the broker said (`LeaseView.ttlMs`; -1 or
       * absent: `ttlMs`): less when it granted less than asked.
       */
      runsMs?: number;
      /** The broker granted it reusable (default false). */
      reusable?: boolean;
      /** The broker does not know the pair's pacing (default false). */
      pacingUnknown?: boolean;
      /** Monotonic ms when the acquire was sent. */
      sentAt: number;
      heartbeat: boolean;
    },
    private readonly deps: LeaseClocks & LeaseHooks,
  ) {
    this.identity = init.identity;
    this.proxy = init.proxy;
    this.domain = init.domain;
    this.target = init.target;
    this.sessionKey = init.sessionKey;
    this.sessionRebound = init.sessionRebound;
    this.ttlMs = init.ttlMs;
    this.reusable = init.reusable === true;
    this.pacingUnknown = init.pacingUnknown === true;
    this.grantRunsMs = runsFor(init.runsMs ?? -1, init.ttlMs);
    this.deadline = deadlineOf(init.sentAt, this.grantRunsMs);
    this.armDeadline();
    if (init.heartbeat) this.schedule();
  }

  /** The lease id (a hand-over to the broker changes it). */
  get id(): string {
    return this.identity.id;
  }

  get fencingToken(): number {
    return this.identity.fencingToken;
  }

  get source(): LeaseSource {
    return this.identity.source;
  }

  /** When the lease expires unless renewed, by the granting store's clock (epoch ms). */
  get expireAt(): number {
    return this.identity.expireAt;
  }

  /** Aborts when the lease is lost; `signal.reason` is a `LeaseLostError`. */
  get signal(): AbortSignal {
    return this.abort.signal;
  }

  /** True once released or lost. */
  get ended(): boolean {
    return this.done;
  }

  /**
   * A reusable lease the broker asked back: another acquire waits for its domain-key, or the key's
   * pacing changed. Send nothing new through it; release it once the request in flight ended.
   */
  get wanted(): boolean {
    return this.isWanted;
  }

  /** Call `fn` once when the broker asks for this lease back (at once when it did); returns the unsubscribe. */
  onWanted(fn: () => void): () => void {
    if (this.isWanted) {
      fn();
      return () => undefined;
    }
    this.wantedBy.add(fn);
    return () => this.wantedBy.delete(fn);
  }

  /** Internal to the SDK: the broker asked for this lease back (LeaseWanted). */
  want(): void {
    if (this.isWanted) return;
    this.isWanted = true;
    const fns = [...this.wantedBy];
    this.wantedBy.clear();
    for (const fn of fns) fn();
  }

  /**
   * Renew now (heartbeats do this by themselves). Resolves with how long the renewal runs from its
   * sending (`ttlMs`, or less when the broker gave less; 0 when it moved nothing); rejects with `LeaseLostError` when lost.
   */
  async renew(ttlMs = this.ttlMs): Promise<number> {
    if (this.done)
      throw this.abort.signal.reason instanceof LeaseLostError ? this.abort.signal.reason : new LeaseLostError(this.id, "NOT_FOUND");
    const identity = this.identity;
    const sentAt = this.deps.monotonic();
    try {
      const renewed = await identity.backend.renew(this, ttlMs);
      // a hand-over may have replaced the lease meanwhile: this answer is about the old one
      // 0: this answer moved nothing (a hand-over replaced the lease meanwhile, or it ended)
      if (this.identity !== identity || this.done) return 0;
      const runs = runsFor(renewed.ttlMs, ttlMs);
      this.identity = { ...identity, expireAt: renewed.expireAt };
      // the broker may run it for less than asked (never more)
      this.deadline = Math.max(this.deadline, deadlineOf(sentAt, runs));
      this.armDeadline();
      return runs;
    } catch (err) {
      if (err instanceof LeaseLostError && this.identity === identity) this.lose(err);
      throw err;
    }
  }

  /** Release with what happened. Always ends the handle, even when the broker cannot be reached. */
  async release(outcome: LeaseOutcome): Promise<void> {
    if (this.done) return;
    this.end();
    await this.identity.backend.release(this, outcome);
  }

  /**
   * Internal to the SDK: the broker, back after an outage, granted this very pair: the handle
   * goes on as that broker lease (heartbeats included), without its holder noticing. False when
   * the handle ended meanwhile (the caller gives the broker lease back).
   */
  handOver(identity: LeaseIdentity, sentAt: number, runsMs = -1): boolean {
    if (this.done) return false;
    this.identity = identity;
    this.deadline = deadlineOf(sentAt, runsFor(runsMs, this.ttlMs));
    this.armDeadline();
    return true;
  }

  /** Internal to the SDK: end the lease as lost (its signal aborts). */
  revoke(reason: LeaseLostReason): void {
    this.lose(new LeaseLostError(this.id, reason));
  }

  private schedule(): void {
    const every = Math.max(10, Math.floor(this.ttlMs / 3));
    this.beatTimer = setTimeout(() => void this.beat(), every);
    this.beatTimer.unref();
  }

  private async beat(): Promise<void> {
    if (this.done) return;
    try {
      await this.renew();
    } catch {
      // lost: the handle ended; a transport failure: the deadline timer gives the lease up
    }
    if (!this.done) this.schedule();
  }

  /** The lease is given up at its deadline unless a renewal moved it. */
  private armDeadline(): void {
    if (this.deadlineTimer !== undefined) clearTimeout(this.deadlineTimer);
    const wait = Math.max(0, this.deadline - this.deps.monotonic());
    this.deadlineTimer = setTimeout(() => {
      if (this.deps.monotonic() >= this.deadline) this.lose(new LeaseLostError(this.id, "EXPIRED"));
      else this.armDeadline();
    }, wait);
    this.deadlineTimer.unref();
  }

  private lose(err: LeaseLostError): void {
    if (this.done) return;
    this.end();
    this.abort.abort(err);
    this.deps.onLost?.(this, err);
  }

  private end(): void {
    this.done = true;
    this.wantedBy.clear();
    if (this.beatTimer !== undefined) clearTimeout(this.beatTimer);
    if (this.deadlineTimer !== undefined) clearTimeout(this.deadlineTimer);
    this.deps.onEnd(this);
  }
}
