import { create } from "@bufbuild/protobuf";
import { status } from "@grpc/grpc-js";
import type { ServerDuplexStream } from "@grpc/grpc-js";
import {
  AcquireLeaseResponseSchema,
  LeaseGrantedSchema,
  LeaseReleasedSchema,
  LeaseRenewedSchema,
  LeaseResponseSchema,
  LeavePoolResponseSchema,
  PongSchema,
  ReleaseLeaseResponseSchema,
  RenewLeaseResponseSchema,
} from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type {
  AcquireLeaseRequest,
  LeaseRequest,
  LeaseResponse,
  ProxyBroker,
  ReleaseLeaseRequest,
} from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type { MethodsOf, ServiceHandlers, TypedClient } from "@proxybroker/sdk/wire";
import { durationOf, timestampOf } from "@proxybroker/sdk/wire";
import { errorToDenied, lostToError, lostToWire } from "../grpc/answers.js";
import { BrokerError } from "../grpc/errors.js";
import { unaryCall } from "../grpc/unary.js";
import { AgentLeaseLost } from "./agent-leases.js";
import type { AgentLeases } from "./agent-leases.js";
import { relayMetadata } from "./relay.js";

type Methods = MethodsOf<typeof ProxyBroker>;
type Body = LeaseResponse["kind"];
type Next = { case: "granted"; value: ReturnType<typeof granted> } | { case: "denied"; value: ReturnType<typeof errorToDenied> };

/** What the agent's ProxyBroker service needs. */
export interface AgentServiceOptions {
  readonly leases: AgentLeases;
  /** The broker, for the calls relayed as they are (snapshots, reported outcomes). */
  readonly broker: TypedClient<Methods>;
  /** The agent's own token to the broker, for relayed calls whose caller sent none. */
  readonly token?: string;
  readonly clock?: () => number;
}

/** Unanswered requests on one Lease stream; more are denied in-band (as on the broker). */
const MAX_IN_FLIGHT = 256;

/**
 * The ProxyBroker service as the agent serves it to the workers of its machine: the broker's
 * messages, status codes and in-band answers (SPEC §5), with the leases from the agent's SDK
 * client — the broker's while it answers, the agent's fallback pool while it does not.
 */
export function agentHandlers(o: AgentServiceOptions): ServiceHandlers<Methods> {
  const { leases } = o;
  const clock = o.clock ?? Date.now;
  return {
    lease: (call) => leaseStream(o, call, clock),

    acquireLease: unaryCall(async (req, signal) => create(AcquireLeaseResponseSchema, { lease: await leases.acquire(req, signal) })),

    renewLease: unaryCall(async (req) => {
      try {
        const r = await leases.renew(req);
        return create(RenewLeaseResponseSchema, { leaseId: req.leaseId, expireTime: timestampOf(r.expireAt), ttl: durationOf(r.ttlMs) });
      } catch (err) {
        throw err instanceof AgentLeaseLost ? lostToError(err.leaseId, err.reason) : err;
      }
    }),

    releaseLease: unaryCall(async (req, signal) => {
      try {
        await leases.release(req);
      } catch (err) {
        throw err instanceof AgentLeaseLost ? lostToError(err.leaseId, err.reason) : err;
      }
      const next = await nextOf(leases, req, signal);
      return create(ReleaseLeaseResponseSchema, { leaseId: req.leaseId, next: next ?? { case: undefined } });
    }),

    reportOutcomes: unaryCall((req, _signal, call) => o.broker.reportOutcomes(req, { metadata: relayMetadata(call.metadata, o.token) })),

    getPoolSnapshot: unaryCall((req, _signal, call) => o.broker.getPoolSnapshot(req, { metadata: relayMetadata(call.metadata, o.token) })),

    // the agent is the pool's member, not its clients: nothing to leave
    leavePool: unaryCall(async () => create(LeavePoolResponseSchema, { left: false })),
  };
}

function granted(requestId: string, lease: Awaited<ReturnType<AgentLeases["acquire"]>>) {
  return create(LeaseGrantedSchema, { requestId, lease });
}

/** A release's `next` acquire, answered granted or denied. */
async function nextOf(leases: AgentLeases, req: ReleaseLeaseRequest, signal: AbortSignal): Promise<Next | undefined> {
  if (req.next === undefined) return undefined;
  return acquireAnswer(leases, req.next, signal);
}

async function acquireAnswer(leases: AgentLeases, req: AcquireLeaseRequest, signal: AbortSignal): Promise<Next> {
  try {
    return { case: "granted", value: granted(req.requestId, await leases.acquire(req, signal)) };
  } catch (err) {
    return { case: "denied", value: errorToDenied(err, { requestId: req.requestId }) };
  }
}

/**
 * The Lease stream: acquires, renews, releases and pings multiplexed, each answered in-band as
 * soon as it is decided; errors never end the stream. A lease granted on it that the agent's SDK
 * loses (revoked when the broker gave its proxy to a silent worker's claim, or not handed over
 * after an outage) is pushed as `LeaseLost`. A closed stream ends nothing but its waiting acquires.
 */
function leaseStream(o: AgentServiceOptions, call: ServerDuplexStream<LeaseRequest, LeaseResponse>, clock: () => number): void {
  const { leases } = o;
  const abort = new AbortController();
  const unwatch = new Set<() => void>();
  let pending = 0;
  let halfClosed = false;
  const send = (answer: Body | Body[]): void => {
    for (const kind of Array.isArray(answer) ? answer : [answer]) {
      if (call.destroyed || !call.writable) {
        giveBack(leases, kind);
        continue;
      }
      call.write(create(LeaseResponseSchema, { kind }));
    }
  };
  const watch = (answer: Body): void => {
    const lease = answer.case === "granted" ? answer.value.lease : undefined;
    if (lease === undefined) return;
    const id = lease.leaseId;
    const stop = leases.onLost(id, (reason) => {
      unwatch.delete(stop);
      if (reason === "REVOKED") send({ case: "lost", value: lostToWire(id, reason) });
    });
    unwatch.add(stop);
  };
  const finishIfDone = (): void => {
    if (halfClosed && pending === 0 && !call.destroyed && call.writable) call.end();
  };
  const run = (ids: { requestId?: string; leaseId?: string }, work: () => Promise<Body | Body[]>): void => {
    if (pending >= MAX_IN_FLIGHT) {
      const over = new BrokerError(
        status.RESOURCE_EXHAUSTED,
        `${MAX_IN_FLIGHT} requests already wait for their answers on this stream: not taken`,
        {
          "retry-after-ms": "100",
        },
      );
      send({ case: "denied", value: errorToDenied(over, ids) });
      return;
    }
    pending++;
    work()
      .catch((err: unknown): Body => {
        if (err instanceof AgentLeaseLost) return { case: "lost", value: lostToWire(err.leaseId, err.reason) };
        return { case: "denied", value: errorToDenied(err, ids) };
      })
      .then((answer) => {
        send(answer);
        for (const a of Array.isArray(answer) ? answer : [answer]) watch(a);
      })
      .catch(() => undefined)
      .finally(() => {
        pending--;
        finishIfDone();
      });
  };

  call.on("data", (req: LeaseRequest) => {
    const m = req.kind;
    switch (m.case) {
      case "acquire":
        run({ requestId: m.value.requestId }, () => acquireAnswer(leases, m.value, abort.signal));
        return;
      case "renew": {
        const leaseId = m.value.leaseId;
        run({ leaseId }, async () => {
          const r = await leases.renew(m.value);
          return {
            case: "renewed",
            value: create(LeaseRenewedSchema, { leaseId, expireTime: timestampOf(r.expireAt), ttl: durationOf(r.ttlMs) }),
          };
        });
        return;
      }
      case "release": {
        const leaseId = m.value.leaseId;
        run({ leaseId }, async () => {
          try {
            await leases.release(m.value);
          } catch (err) {
            if (!(err instanceof AgentLeaseLost)) throw err;
            // lost, then the next lease's own answer (correlated by its request_id)
            const next = await nextOf(leases, m.value, abort.signal);
            const lost: Body = { case: "lost", value: lostToWire(err.leaseId, err.reason) };
            return next === undefined ? lost : [lost, next];
          }
          const next = await nextOf(leases, m.value, abort.signal);
          return { case: "released", value: create(LeaseReleasedSchema, { leaseId, next: next ?? { case: undefined } }) };
        });
        return;
      }
      case "ping":
        // the agent answers for itself: its own liveness to the broker is its SDK's business
        send({ case: "pong", value: create(PongSchema, { time: timestampOf(clock()) }) });
        return;
      case undefined:
        send({
          case: "denied",
          value: errorToDenied(new BrokerError(status.INVALID_ARGUMENT, "LeaseRequest has none of acquire, renew, release, ping"), {}),
        });
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
    for (const stop of unwatch) stop();
    unwatch.clear();
  });
}

/** Give back a lease in an answer nobody can receive (ABANDONED: it was never used). */
function giveBack(leases: AgentLeases, kind: Body): void {
  const lease =
    kind.case === "granted"
      ? kind.value.lease
      : kind.case === "released" && kind.value.next.case === "granted"
        ? kind.value.next.value.lease
        : undefined;
  if (lease !== undefined) void leases.abandon(lease.leaseId);
}
