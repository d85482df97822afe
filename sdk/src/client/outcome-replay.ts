import { create } from "@bufbuild/protobuf";
import type { FallbackPool } from "../fallback/index.js";
import { ObservedOutcomeSchema } from "../gen/proxybroker/v1/broker_pb.js";
import type { ProxyBroker } from "../gen/proxybroker/v1/broker_pb.js";
import type { ClientOf } from "../wire/grpc-adapter.js";
import { timestampOf } from "../wire/codec.js";
import { outcomeToWire } from "./broker-backend.js";
import type { LeaseOutcome } from "./lease.js";

const BATCH = 500;

/**
 * Replays outcomes seen while the broker was unreachable (fallback leases; an owed release whose
 * lease went on as a fallback lease's, or that could not be owed — see `settleOwed`) through
 * `ReportOutcomes` once it answers again. They wait in the
 * fallback pool's bounded buffer; what a replay cannot deliver goes back to its front.
 */
export class OutcomeReplay {
  private flushing: Promise<number> | undefined;

  constructor(
    private readonly opts: {
      readonly broker: ClientOf<typeof ProxyBroker>;
      readonly fallback: FallbackPool;
      readonly workerId: string;
      readonly callTimeoutMs: number;
    },
  ) {}

  /** Keep an outcome of a broker lease whose release the broker will not hear. */
  keep(o: { pool: string; proxyId: string; domainKey: string; outcome: LeaseOutcome; observedAt: number }): void {
    if (o.proxyId === "") return;
    this.opts.fallback.requeueOutcomes([
      {
        pool: o.pool,
        proxyId: o.proxyId,
        domainKey: o.domainKey,
        outcome: {
          kind: o.outcome.kind,
          httpStatus: o.outcome.httpStatus ?? 0,
          latencyMs: o.outcome.latencyMs ?? 0,
          retryAfterMs: o.outcome.retryAfterMs ?? 0,
        },
        observedAt: o.observedAt,
        workerId: this.opts.workerId,
      },
    ]);
  }

  /** Send everything buffered; resolves with how many outcomes the broker took. */
  flush(): Promise<number> {
    this.flushing ??= this.send().finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  private async send(): Promise<number> {
    const all = this.opts.fallback.drainOutcomes();
    let sent = 0;
    for (let i = 0; i < all.length; i += BATCH) {
      const batch = all.slice(i, i + BATCH);
      const byPool = new Map<string, typeof batch>();
      for (const o of batch) byPool.set(o.pool, [...(byPool.get(o.pool) ?? []), o]);
      try {
        for (const [pool, list] of byPool) {
          await this.opts.broker.reportOutcomes(
            {
              pool,
              workerId: this.opts.workerId,
              outcomes: list.map((o) =>
                create(ObservedOutcomeSchema, {
                  proxyId: o.proxyId,
                  domain: o.domainKey,
                  outcome: outcomeToWire(o.outcome),
                  observeTime: timestampOf(o.observedAt),
                }),
              ),
            },
            { deadline: this.opts.callTimeoutMs },
          );
        }
        sent += batch.length;
      } catch {
        this.opts.fallback.requeueOutcomes(all.slice(i));
        break;
      }
    }
    return sent;
  }
}
