import { create } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import type { Duration } from "@bufbuild/protobuf/wkt";
import type { ClientDuplexStream } from "@grpc/grpc-js";
import { DenyReason, LeaseRequestSchema, OutcomeKind, OutcomeSchema } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type { Lease, LeaseRequest, LeaseResponse, ProxyBroker } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type { ClientOf } from "@proxybroker/sdk/wire";

/** The answer to an acquire. */
export type AcquireAnswer = { readonly ok: true; readonly lease: Lease } | { readonly ok: false; readonly reason: string };

/** The answer to a release; `next` is there when the release carried one and it was answered with it. */
export interface ReleaseAnswer {
  readonly released: boolean;
  readonly next?: AcquireAnswer;
}

/** What to acquire. */
export interface AcquireAsk {
  readonly workerId: string;
  readonly domain: string;
  /** "" = the default pool. */
  readonly pool?: string;
  /** From `maxWait` (built once per loop with `maxWaitOf`). */
  readonly maxWait: Duration | undefined;
}

type Call = ClientDuplexStream<LeaseRequest, LeaseResponse>;

interface Pending<T> {
  readonly resolve: (value: T) => void;
  readonly reject: (err: Error) => void;
}

const SUCCESS = create(OutcomeSchema, { kind: OutcomeKind.SUCCESS });

/** A `max_wait` duration, or none for 0. */
export function maxWaitOf(ms: number): Duration | undefined {
  return ms > 0 ? durationFromMs(ms) : undefined;
}

/**
 * One Lease stream with the least bookkeeping a load generator needs: acquires are matched to
 * their answers by request_id, releases by lease_id. Many loops share one stream.
 */
export class BenchStream {
  private readonly call: Call;
  private readonly acquires = new Map<string, Pending<AcquireAnswer>>();
  private readonly releases = new Map<string, Pending<ReleaseAnswer>>();
  private seq = 0;
  private failed: Error | undefined;
  /** Answers that nobody waited for (a lease granted after its release was lost, …). */
  strays = 0;

  constructor(broker: ClientOf<typeof ProxyBroker>) {
    this.call = broker.lease();
    this.call.on("data", (res: LeaseResponse) => this.answer(res));
    this.call.on("error", (err: Error) => this.fail(err));
  }

  /** Acquire one lease. */
  acquire(ask: AcquireAsk): Promise<AcquireAnswer> {
    const requestId = this.nextId();
    return new Promise<AcquireAnswer>((resolve, reject) => {
      if (this.failed !== undefined) return reject(this.failed);
      this.acquires.set(requestId, { resolve, reject });
      this.call.write(create(LeaseRequestSchema, { kind: { case: "acquire", value: { requestId, ...ask } } }));
    });
  }

  /** Release `lease` with SUCCESS; with `next`, acquire the next lease in the same message. */
  release(lease: Lease, next?: AcquireAsk): Promise<ReleaseAnswer> {
    const leaseId = lease.leaseId;
    const nextRequest = next === undefined ? undefined : { requestId: this.nextId(), ...next };
    return new Promise<ReleaseAnswer>((resolve, reject) => {
      if (this.failed !== undefined) return reject(this.failed);
      this.releases.set(leaseId, { resolve, reject });
      this.call.write(
        create(LeaseRequestSchema, {
          kind: {
            case: "release",
            value: { leaseId, fencingToken: lease.fencingToken, outcome: SUCCESS, ...(nextRequest ? { next: nextRequest } : {}) },
          },
        }),
      );
    });
  }

  /** Half-close the stream. */
  end(): void {
    this.call.end();
  }

  private nextId(): string {
    return `b${++this.seq}`;
  }

  private answer(res: LeaseResponse): void {
    const a = res.kind;
    switch (a.case) {
      case "granted":
        this.settleAcquire(a.value.requestId, a.value.lease ? { ok: true, lease: a.value.lease } : { ok: false, reason: "empty grant" });
        return;
      case "denied":
        if (a.value.leaseId !== "") {
          this.settleRelease(a.value.leaseId, { released: false });
          return;
        }
        this.settleAcquire(a.value.requestId, { ok: false, reason: DenyReason[a.value.reason] ?? String(a.value.reason) });
        return;
      case "released": {
        const n = a.value.next;
        const next: AcquireAnswer | undefined =
          n.case === "granted" && n.value.lease !== undefined
            ? { ok: true, lease: n.value.lease }
            : n.case === "denied"
              ? { ok: false, reason: DenyReason[n.value.reason] ?? String(n.value.reason) }
              : undefined;
        this.settleRelease(a.value.leaseId, next === undefined ? { released: true } : { released: true, next });
        return;
      }
      case "lost":
        this.settleRelease(a.value.leaseId, { released: false });
        return;
      default:
        this.strays++;
    }
  }

  private settleAcquire(requestId: string, answer: AcquireAnswer): void {
    const pending = this.acquires.get(requestId);
    if (pending === undefined) {
      this.strays++;
      return;
    }
    this.acquires.delete(requestId);
    pending.resolve(answer);
  }

  private settleRelease(leaseId: string, answer: ReleaseAnswer): void {
    const pending = this.releases.get(leaseId);
    if (pending === undefined) {
      this.strays++;
      return;
    }
    this.releases.delete(leaseId);
    pending.resolve(answer);
  }

  private fail(err: Error): void {
    this.failed = err;
    for (const p of [...this.acquires.values(), ...this.releases.values()]) p.reject(err);
    this.acquires.clear();
    this.releases.clear();
  }
}
