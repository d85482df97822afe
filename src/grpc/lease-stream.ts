import { create } from "@bufbuild/protobuf";
import { status } from "@grpc/grpc-js";
import type { ServerDuplexStream } from "@grpc/grpc-js";
import { durationOf, timestampOf } from "@proxybroker/sdk/wire";
import { LeaseReleasedSchema, LeaseRenewedSchema, LeaseResponseSchema } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type { LeaseRequest, LeaseResponse } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { decisionToWire, errorToDenied, lostToWire, nextToWire, wantedToWire } from "./answers.js";
import type { BrokerContext, StreamHandle } from "./context.js";
import { BrokerError } from "./errors.js";
import type { LeaseCalls } from "./lease-calls.js";
import { callerName } from "../security/auth.js";
import type { Decision } from "../lease/lease-engine.js";
import { answerPing } from "./ping.js";

type Call = ServerDuplexStream<LeaseRequest, LeaseResponse>;
type Body = LeaseResponse["kind"];
type Kind = "acquire" | "renew" | "release";

/**
 * The Lease stream: many acquires, renews and releases multiplexed on one stream, each answered
 * in-band as soon as it is decided (answers may come out of order: they carry request_id or
 * lease_id). Errors never end the stream. A closed or broken stream ends nothing but its waiting
 * acquires: its leases live on until released, renewed elsewhere, or expired (G3). The calls
 * themselves, and their bookkeeping, are the one lease path (lease-calls.ts).
 */
export function leaseStream(ctx: BrokerContext, calls: LeaseCalls): (call: Call) => void {
  return (call) => {
    const abort = new AbortController();
    let pending = 0;
    let halfClosed = false;
    const handle: StreamHandle = {
      inFlight: () => pending,
      close: (message) => {
        if (!call.destroyed) call.emit("error", { code: status.UNAVAILABLE, details: message });
      },
    };
    ctx.streams.add(handle);
    ctx.metrics.openStreams.inc();

    // An answer the stream can no longer carry: a lease in it would be held by nobody, so it is
    // given back at once rather than left to expire.
    // Backpressure: while the client does not read its answers, its requests are not read either.
    let paused = false;
    const send = (answer: Body | Body[]) => {
      for (const kind of Array.isArray(answer) ? answer : [answer]) {
        if (call.destroyed || !call.writable) {
          giveBack(calls, kind);
          continue;
        }
        if (!call.write(create(LeaseResponseSchema, { kind })) && !paused) {
          paused = true;
          call.pause();
          call.once("drain", () => {
            paused = false;
            call.resume();
          });
        }
      }
    };
    /** Tell this stream that lease `leaseId` was revoked (see HeldLeases). */
    const tell = (leaseId: string) => () => send({ case: "lost", value: lostToWire(leaseId, "REVOKED") });
    /** Ask this stream to give reusable lease `leaseId` back (see HeldLeases.wantBack). */
    const want = (leaseId: string) => () => send({ case: "wanted", value: wantedToWire(leaseId) });
    /**
     * A grant on this stream: held through it, by `workerId`. Reusable (the request asked to
     * `reuse` it) when the pair is not paced: its holder can be asked for it back on this stream.
     */
    const held = (
      d: Decision,
      req: { readonly workerId: string; readonly reuse: boolean; readonly honorsLeaseTtl: boolean } | undefined,
      since: number,
    ): boolean => {
      if (d.kind !== "granted") return false;
      const l = d.lease;
      const reusable = req?.reuse === true && l.intervalMs === 0;
      // not reusable after all when its key was asked back while this grant was decided
      return ctx.held.hold(
        l.leaseId,
        {
          pool: l.pool,
          proxyId: l.proxy.id,
          domainKey: l.domainKey,
          workerId: req?.workerId ?? "",
          fencingToken: l.fencingToken,
          expireAt: l.expireAt,
          honorsTtl: req?.honorsLeaseTtl === true,
          tell: tell(l.leaseId),
          ...(reusable ? { want: want(l.leaseId), stream: handle } : {}),
        },
        since,
      );
    };
    const finishIfDone = () => {
      if (halfClosed && pending === 0 && !call.destroyed && call.writable) call.end();
    };
    const limit = ctx.limits.maxInFlightPerStream;
    const caller = callerName(call);
    const opts = { surface: "stream", caller, signal: abort.signal } as const;
    /** Run one call; its errors (booked by the lease path) are answered in-band as denials. */
    const run = (kind: Kind, pool: string, ids: Ids, work: () => Promise<Body | Body[]>) => {
      if (pending >= limit) {
        const over = new BrokerError(
          status.RESOURCE_EXHAUSTED,
          `${limit} requests already wait for their answers on this stream (MAX_IN_FLIGHT_PER_STREAM): not taken`,
          { "retry-after-ms": "100" },
          { reason: "TOO_MANY_IN_FLIGHT" },
        );
        send(denied(calls.refuse(kind, pool, over), ids));
        return;
      }
      pending++;
      work()
        .catch((err: unknown) => denied(BrokerError.from(err), ids))
        .then(send)
        .catch(() => undefined)
        .finally(() => {
          pending--;
          finishIfDone();
        });
    };

    call.on("data", (req: LeaseRequest) => {
      const m = req.kind;
      switch (m.case) {
        case "acquire": {
          const requestId = m.value.requestId;
          run("acquire", m.value.pool, { requestId }, async () => {
            const since = ctx.held.mark();
            const d = await calls.acquire(m.value, opts);
            return decisionToWire(requestId, d, held(d, m.value, since));
          });
          return;
        }
        case "renew": {
          const leaseId = m.value.leaseId;
          run("renew", "", { leaseId }, async () => {
            const r = await calls.renew(m.value, opts);
            if (r.kind === "lost") {
              ctx.held.drop(leaseId);
              return { case: "lost", value: lostToWire(leaseId, r.reason) };
            }
            ctx.held.renewed(leaseId, r.expireAt, tell(leaseId), want(leaseId), handle);
            return {
              case: "renewed",
              value: create(LeaseRenewedSchema, { leaseId, expireTime: timestampOf(r.expireAt), ttl: durationOf(r.ttlMs) }),
            };
          });
          return;
        }
        case "release": {
          const leaseId = m.value.leaseId;
          run("release", "", { leaseId }, async () => {
            // given back: the release's own outcome or next must not ask this stream for it back
            ctx.held.unask(leaseId);
            const since = ctx.held.mark();
            const r = await calls.release(m.value, opts);
            ctx.held.drop(leaseId);
            const reusable = r.next !== undefined && r.next.kind !== "refused" && held(r.next, m.value.next, since);
            const next = r.next === undefined ? undefined : nextToWire(r.nextRequestId, r.next, reusable);
            // lost, then the next lease's own answer (correlated by its request_id)
            if (r.kind === "lost") {
              const lost: Body = { case: "lost", value: lostToWire(leaseId, r.reason ?? "NOT_FOUND") };
              return next === undefined ? lost : [lost, next];
            }
            return { case: "released", value: create(LeaseReleasedSchema, { leaseId, next: next ?? { case: undefined } }) };
          });
          return;
        }
        case "ping": {
          // answered even beyond the in-flight limit and while draining (the broker is there); beyond
          // the limit a claim is not recorded (nor acknowledged): a flood of claims waits on no store
          const claims = pending < limit;
          pending++;
          answerPing(ctx, m.value, { claims })
            .then((pong) => send({ case: "pong", value: pong }))
            .catch(() => undefined)
            .finally(() => {
              pending--;
              finishIfDone();
            });
          return;
        }
        case undefined:
          send(denied(new BrokerError(status.INVALID_ARGUMENT, "LeaseRequest has none of acquire, renew, release, ping"), {}));
          return;
      }
    });
    call.on("end", () => {
      halfClosed = true;
      finishIfDone();
    });
    call.on("error", () => undefined);
    call.once("close", () => {
      abort.abort(new BrokerError(status.CANCELLED, "stream closed"));
      ctx.streams.delete(handle);
      // its reusable leases can no longer be asked back: no acquire waits for their give-back
      ctx.held.unaskStream(handle);
      ctx.metrics.openStreams.dec();
    });
  };
}

/** The ids an in-band answer carries to be matched. */
interface Ids {
  readonly requestId?: string;
  readonly leaseId?: string;
}

/** The in-band answer to a failed request (booked already). */
function denied(e: BrokerError, ids: Ids): Body {
  return { case: "denied", value: errorToDenied(e, ids) };
}

/** Give back a lease in an answer nobody can receive (ABANDONED: it was never used). */
function giveBack(calls: LeaseCalls, kind: Body): void {
  const lease =
    kind.case === "granted"
      ? kind.value.lease
      : kind.case === "released" && kind.value.next.case === "granted"
        ? kind.value.next.value.lease
        : undefined;
  if (lease !== undefined) calls.giveBack({ leaseId: lease.leaseId, fencingToken: Number(lease.fencingToken) });
}
