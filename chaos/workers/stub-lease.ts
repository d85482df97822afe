/**
 * What a careful worker without the SDK does with a lease it got from the raw stubs: heartbeats
 * (RenewLease every ttl/3, through whichever replica answers), a deadline on a monotonic clock
 * counted from when the acquire (or the last confirmed renewal) was *sent*, minus a margin, and
 * a signal that aborts at that deadline or when the broker says the lease is lost — the proxy
 * must not be used after either. Then ReleaseLease through whichever replica answers.
 */
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { OutcomeKind } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type { Lease as WireLease } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type { LeaseEnd } from "../records.js";
import type { OutcomeName } from "./loop.js";
import { codeOf, isLost, trailerOf, type Replicas } from "./replicas.js";

/** The part of the TTL given up early, so the worker stops before the store's expiry. */
function marginOf(ttlMs: number): number {
  return Math.min(1_000, Math.max(50, Math.round(ttlMs * 0.1)));
}

const RELEASE_ATTEMPTS = 4;

const KIND: Readonly<Record<OutcomeName, OutcomeKind>> = {
  SUCCESS: OutcomeKind.SUCCESS,
  TARGET_ERROR: OutcomeKind.TARGET_ERROR,
  PROXY_ERROR: OutcomeKind.PROXY_ERROR,
  ABANDONED: OutcomeKind.ABANDONED,
};

export class StubLease {
  private readonly abort = new AbortController();
  private deadline: number;
  private deadlineTimer: NodeJS.Timeout | undefined;
  private beatTimer: NodeJS.Timeout | undefined;
  private ended = false;
  /** How it ended before the release, if it did: lost (the broker said so) or expired (our deadline). */
  private endedAs: { readonly how: LeaseEnd; readonly detail: string } | undefined;

  constructor(
    readonly lease: WireLease,
    private readonly opts: {
      readonly replicas: Replicas;
      readonly workerId: string;
      readonly ttlMs: number;
      /** performance.now() when the acquire that was granted was sent. */
      readonly sentAt: number;
    },
  ) {
    this.deadline = opts.sentAt + opts.ttlMs - marginOf(opts.ttlMs);
    this.armDeadline();
    this.schedule();
  }

  get signal(): AbortSignal {
    return this.abort.signal;
  }

  /** Stop heartbeats, release with `outcome`; says how the lease ended. */
  async release(outcome: {
    readonly kind: OutcomeName;
    readonly httpStatus: number;
  }): Promise<{ readonly how: LeaseEnd; readonly detail?: string }> {
    const before = this.endedAs;
    this.stop();
    const { replicas } = this.opts;
    let lastError = "";
    for (let i = 0; i < RELEASE_ATTEMPTS; i++) {
      try {
        await replicas.current.releaseLease(
          {
            leaseId: this.lease.leaseId,
            fencingToken: this.lease.fencingToken,
            outcome: { kind: KIND[outcome.kind], httpStatus: outcome.httpStatus },
          },
          { deadline: 1_000 },
        );
        return before ?? { how: "released" };
      } catch (err) {
        if (isLost(err)) return before ?? { how: "lost", detail: `release: ${trailerOf(err, "lost-reason") ?? `code ${codeOf(err)}`}` };
        lastError = `code ${codeOf(err)}`;
        replicas.next();
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    return before ?? { how: "release-failed", detail: lastError };
  }

  private schedule(): void {
    this.beatTimer = setTimeout(() => void this.beat(), Math.max(10, Math.floor(this.opts.ttlMs / 3)));
  }

  private async beat(): Promise<void> {
    if (this.ended) return;
    const { replicas, ttlMs } = this.opts;
    const sentAt = performance.now();
    try {
      await replicas.current.renewLease(
        { leaseId: this.lease.leaseId, fencingToken: this.lease.fencingToken, ttl: durationFromMs(ttlMs), workerId: this.opts.workerId },
        { deadline: Math.max(100, Math.floor(ttlMs / 3)) },
      );
      if (this.ended) return;
      this.deadline = Math.max(this.deadline, sentAt + ttlMs - marginOf(ttlMs));
      this.armDeadline();
    } catch (err) {
      if (isLost(err)) {
        this.lose("lost", `renew: ${trailerOf(err, "lost-reason") ?? `code ${codeOf(err)}`}`);
        return;
      }
      replicas.next(); // this replica cannot serve: the next heartbeat goes to another
    }
    if (!this.ended) this.schedule();
  }

  private armDeadline(): void {
    if (this.deadlineTimer !== undefined) clearTimeout(this.deadlineTimer);
    this.deadlineTimer = setTimeout(
      () => {
        if (performance.now() >= this.deadline) this.lose("expired", "no renewal confirmed before the deadline");
        else this.armDeadline();
      },
      Math.max(0, this.deadline - performance.now()),
    );
  }

  private lose(how: LeaseEnd, detail: string): void {
    if (this.ended) return;
    this.endedAs = { how, detail };
    this.stop();
    this.abort.abort(new Error(`lease ${how}: ${detail}`));
  }

  private stop(): void {
    this.ended = true;
    if (this.beatTimer !== undefined) clearTimeout(this.beatTimer);
    if (this.deadlineTimer !== undefined) clearTimeout(this.deadlineTimer);
  }
}
