/**
 * G6 fair waiting: one FIFO queue per (pool, domain-key) on this broker. A waiting acquire is
 * retried when a lease of its queue is released through this broker, when the store said a proxy
 * becomes eligible (retry_after), and at least every `pollMs` (releases through other replicas
 * and expiries are only seen that way). Waiters are tried in arrival order; the first plain waiter
 * that is denied stops the pass, so nobody overtakes it. Waiters bound to a session, tier or
 * labels, or of a worker some proxies are reserved against ("narrow", see LeaseEngine), ask for
 * something only some proxies can serve: they never block the waiters
 * behind them, nor new requests (see `waitingPlain`); a denied narrow waiter rests until its own
 * retry_after or a release, and a pass tries at most NARROW_PER_PASS of them, so that many narrow
 * waiters cannot starve the plain ones.
 */

/** What a queue asks of one attempt. */
export type AttemptResult<G> = { readonly kind: "granted"; readonly grant: G } | { readonly kind: "denied"; readonly retryAfterMs: number };

/** A waiting acquire. */
export interface Waiter<G> {
  /** Try once, now. */
  readonly attempt: () => Promise<AttemptResult<G>>;
  readonly deadline: number;
  /** A session/tier/labels request: its denial does not stop the pass. */
  readonly narrow: boolean;
  readonly signal: AbortSignal | undefined;
  readonly settle: (result: AttemptResult<G> | { readonly kind: "error"; readonly error: unknown }) => void;
}

/** A queued waiter with its resting time. */
interface Queued<G> {
  readonly waiter: Waiter<G>;
  /** A denied narrow waiter is not tried again before this (epoch ms), unless a release wakes it. */
  notBefore: number;
}

interface Queue<G> {
  readonly waiters: Queued<G>[];
  /** How many of `waiters` are plain (not narrow). */
  plain: number;
  draining: boolean;
  again: boolean;
  timer: NodeJS.Timeout | undefined;
  retryAfterMs: number;
}

/** Narrow waiters tried per pass at most. */
const NARROW_PER_PASS = 8;

/** Why a waiter was not queued. */
export type Refusal = "key-full" | "broker-full";

export class WaitQueues<G> {
  private readonly queues = new Map<string, Queue<G>>();
  private total = 0;

  constructor(
    private readonly opts: {
      readonly clock: () => number;
      readonly pollMs: number;
      /** Called for a grant whose waiter went away meanwhile (stream closed, call cancelled). */
      readonly orphaned: (grant: G) => void;
      /** Most waiters per key and in all (more are refused by `enqueue`). Default: no limit. */
      readonly maxPerKey?: number;
      readonly maxTotal?: number;
      /** A key got its first waiter / lost its last one (to watch it for releases elsewhere). */
      readonly opened?: (key: string) => void;
      readonly closed?: (key: string) => void;
    },
  ) {}

  /** Waiters currently queued for this key. */
  waiting(key: string): number {
    return this.queues.get(key)?.waiters.length ?? 0;
  }

  /** Plain waiters (no session, tier or labels) queued for this key: a new request may not overtake them. */
  waitingPlain(key: string): number {
    return this.queues.get(key)?.plain ?? 0;
  }

  /** The last retry_after seen by the queue of this key (for callers that will not wait). */
  retryAfterMs(key: string): number {
    return this.queues.get(key)?.retryAfterMs ?? this.opts.pollMs;
  }

  /** Total waiters on this broker. */
  get size(): number {
    return this.total;
  }

  /**
   * Queue a waiter; it is tried at the next pass (started now). Refused (nothing queued) when its
   * key or the broker holds the most waiters allowed.
   */
  enqueue(key: string, waiter: Waiter<G>, retryAfterMs: number): Refusal | undefined {
    if (this.total >= (this.opts.maxTotal ?? Infinity)) return "broker-full";
    let q = this.queues.get(key);
    if ((q?.waiters.length ?? 0) >= (this.opts.maxPerKey ?? Infinity)) return "key-full";
    if (q === undefined) {
      q = { waiters: [], plain: 0, draining: false, again: false, timer: undefined, retryAfterMs };
      this.queues.set(key, q);
      this.opts.opened?.(key);
    }
    q.waiters.push({ waiter, notBefore: 0 });
    this.total++;
    if (!waiter.narrow) q.plain++;
    this.schedule(key, q, retryAfterMs);
    return undefined;
  }

  /** Take the waiter at `index` out of `q`. */
  private remove(q: Queue<G>, index: number): void {
    if (index < 0) return;
    const [gone] = q.waiters.splice(index, 1);
    if (gone === undefined) return;
    this.total--;
    if (!gone.waiter.narrow) q.plain--;
  }

  /** Something was released for this key: try its waiters now, the resting narrow ones too. */
  wake(key: string): void {
    const q = this.queues.get(key);
    if (q === undefined) return;
    for (const w of q.waiters) w.notBefore = 0;
    void this.drain(key, q);
  }

  /** Fail every waiter (shutdown). */
  rejectAll(error: unknown): void {
    for (const [key, q] of this.queues) {
      const all = q.waiters.splice(0);
      this.total -= all.length;
      q.plain = 0;
      for (const w of all) w.waiter.settle({ kind: "error", error });
      if (q.timer !== undefined) clearTimeout(q.timer);
      this.queues.delete(key);
      this.opts.closed?.(key);
    }
  }

  private schedule(key: string, q: Queue<G>, retryAfterMs: number): void {
    if (q.waiters.length === 0) {
      if (q.timer !== undefined) clearTimeout(q.timer);
      if (!q.draining && this.queues.delete(key)) this.opts.closed?.(key);
      return;
    }
    const now = this.opts.clock();
    let nextDeadline = Infinity;
    for (const w of q.waiters) nextDeadline = Math.min(nextDeadline, w.waiter.deadline);
    const hint = retryAfterMs >= 0 ? retryAfterMs : this.opts.pollMs;
    const delay = Math.max(1, Math.min(hint, this.opts.pollMs, nextDeadline - now));
    if (q.timer !== undefined) clearTimeout(q.timer);
    q.timer = setTimeout(() => {
      q.timer = undefined;
      void this.drain(key, q);
    }, delay);
    q.timer.unref();
  }

  private async drain(key: string, q: Queue<G>): Promise<void> {
    if (q.draining) {
      q.again = true;
      return;
    }
    q.draining = true;
    let retryAfterMs = -1;
    try {
      do {
        q.again = false;
        this.dropExpired(q);
        retryAfterMs = await this.pass(q);
      } while (q.again);
    } finally {
      q.draining = false;
    }
    if (retryAfterMs >= 0) q.retryAfterMs = retryAfterMs;
    this.schedule(key, q, retryAfterMs);
  }

  /** Settle the waiters whose signal aborted or whose deadline passed (one pass, in order). */
  private dropExpired(q: Queue<G>): void {
    const now = this.opts.clock();
    const gone: Waiter<G>[] = [];
    let kept = 0;
    for (const entry of q.waiters) {
      const w = entry.waiter;
      if (w.signal?.aborted === true || now >= w.deadline) gone.push(w);
      else q.waiters[kept++] = entry;
    }
    if (gone.length === 0) return;
    q.waiters.length = kept;
    this.total -= gone.length;
    for (const w of gone) {
      if (!w.narrow) q.plain--;
      if (w.signal?.aborted === true) w.settle({ kind: "error", error: w.signal.reason });
      else w.settle({ kind: "denied", retryAfterMs: q.retryAfterMs });
    }
  }

  /**
   * One pass over the queue in arrival order: every plain waiter until the first one denied, and
   * up to NARROW_PER_PASS narrow ones that are not resting. Returns the smallest retry_after seen
   * (-1 if none).
   */
  private async pass(q: Queue<G>): Promise<number> {
    let minRetry = -1;
    let narrowTried = 0;
    let i = 0;
    while (i < q.waiters.length) {
      const entry = q.waiters[i]!;
      const w = entry.waiter;
      if (w.narrow && (narrowTried >= NARROW_PER_PASS || entry.notBefore > this.opts.clock())) {
        i++;
        continue;
      }
      if (w.narrow) narrowTried++;
      let r: AttemptResult<G>;
      try {
        r = await w.attempt();
      } catch (error) {
        this.remove(q, q.waiters.indexOf(entry));
        w.settle({ kind: "error", error });
        continue;
      }
      if (r.kind === "granted") {
        this.remove(q, q.waiters.indexOf(entry));
        if (w.signal?.aborted === true) this.opts.orphaned(r.grant);
        else w.settle(r);
        continue;
      }
      if (r.retryAfterMs >= 0) minRetry = minRetry < 0 ? r.retryAfterMs : Math.min(minRetry, r.retryAfterMs);
      if (!w.narrow) break;
      const rest = r.retryAfterMs >= 0 ? Math.min(r.retryAfterMs, this.opts.pollMs) : this.opts.pollMs;
      entry.notBefore = this.opts.clock() + Math.max(1, rest);
      i++;
    }
    return minRetry;
  }
}
