import { randomBytes } from "node:crypto";
/**
 * Test helper: a Lease stream with request/answer correlation (acquires by request_id, renews and
 * releases by lease_id), so tests can `await` each answer.
 */
import { create } from "@bufbuild/protobuf";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { AcquireLeaseRequestSchema, LeaseRequestSchema, OutcomeKind } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type { PingSchema } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type { LeaseResponse, ProxyBroker } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type { ClientOf } from "@proxybroker/sdk/wire";
import { answerKey } from "../../sdk/src/client/lease-channel.js";

type Answer = LeaseResponse["kind"];
type AcquireInit = MessageInitShape<typeof AcquireLeaseRequestSchema>;

export class StreamClient {
  private readonly call;
  private readonly waiting = new Map<string, Array<(a: Answer) => void>>();
  readonly received: Answer[] = [];
  private seq = 0;
  /** Request ids unique across streams: the broker gives a repeated (worker_id, request_id) the same lease. */
  private readonly idPrefix = randomBytes(4).toString("hex");

  constructor(broker: ClientOf<typeof ProxyBroker>) {
    this.call = broker.lease();
    this.call.on("data", (res: LeaseResponse) => {
      const a = res.kind;
      this.received.push(a);
      const key = a.case === "pong" ? "pong" : answerKey(a);
      const q = this.waiting.get(key);
      const fn = q?.shift();
      if (q?.length === 0) this.waiting.delete(key);
      fn?.(a);
    });
    this.call.on("error", () => undefined);
  }

  private expect(key: string): Promise<Answer> {
    return new Promise((resolve) => {
      const q = this.waiting.get(key) ?? [];
      q.push(resolve);
      this.waiting.set(key, q);
    });
  }

  /** Send an acquire; resolves with its granted/denied answer. */
  acquire(init: AcquireInit & { maxWaitMs?: number; ttlMs?: number }): Promise<Answer> {
    const requestId = init.requestId ?? `${this.idPrefix}-${++this.seq}`;
    const { maxWaitMs, ttlMs, ...rest } = init;
    const acquire = create(AcquireLeaseRequestSchema, {
      workerId: "test-worker",
      ...rest,
      requestId,
      ...(maxWaitMs !== undefined ? { maxWait: durationFromMs(maxWaitMs) } : {}),
      ...(ttlMs !== undefined ? { ttl: durationFromMs(ttlMs) } : {}),
    });
    const p = this.expect(`req:${requestId}`);
    this.call.write(create(LeaseRequestSchema, { kind: { case: "acquire", value: acquire } }));
    return p;
  }

  /** Send a ping; resolves with the next pong (pongs carry no id: in order of arrival). */
  ping(value: MessageInitShape<typeof PingSchema>): Promise<Answer> {
    const p = this.expect("pong");
    this.call.write(create(LeaseRequestSchema, { kind: { case: "ping", value } }));
    return p;
  }

  renew(leaseId: string, fencingToken: bigint, ttlMs?: number): Promise<Answer> {
    const p = this.expect(`lease:${leaseId}`);
    this.call.write(
      create(LeaseRequestSchema, {
        kind: { case: "renew", value: { leaseId, fencingToken, ...(ttlMs !== undefined ? { ttl: durationFromMs(ttlMs) } : {}) } },
      }),
    );
    return p;
  }

  release(leaseId: string, fencingToken: bigint, kind: OutcomeKind = OutcomeKind.SUCCESS, next?: AcquireInit): Promise<Answer> {
    const p = this.expect(`lease:${leaseId}`);
    const nextReq =
      next === undefined
        ? undefined
        : create(AcquireLeaseRequestSchema, { workerId: "test-worker", requestId: `${this.idPrefix}-${++this.seq}`, ...next });
    this.call.write(
      create(LeaseRequestSchema, {
        kind: { case: "release", value: { leaseId, fencingToken, outcome: { kind }, ...(nextReq ? { next: nextReq } : {}) } },
      }),
    );
    return p;
  }

  /** Break the stream from the client side (as a crashed worker would). */
  cancel(): void {
    this.call.cancel();
  }

  end(): void {
    this.call.end();
  }
}

/** Narrow an answer to a grant or throw with what it was. */
export function granted(a: Answer) {
  if (a.case !== "granted" || a.value.lease === undefined) throw new Error(`expected granted, got ${JSON.stringify(a, bigintSafe)}`);
  return a.value.lease;
}

export function bigintSafe(_k: string, v: unknown): unknown {
  return typeof v === "bigint" ? v.toString() : v;
}
