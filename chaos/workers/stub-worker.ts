/**
 * Chaos worker on the raw generated stubs, no SDK: `createClient(ProxyBroker, grpcClient)` per
 * replica, unary AcquireLease (with a request_id, retried on the other replica with the same id
 * when one cannot serve), RenewLease heartbeats and ReleaseLease (chaos/workers/stub-lease.ts).
 * Each lease fetches its plan through the leased proxy and stops when the lease's signal aborts.
 */
import { randomUUID } from "node:crypto";
import * as grpc from "@grpc/grpc-js";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import type { Lease as WireLease } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { readConfig } from "./config.js";
import type { WorkerConfig } from "./config.js";
import { FailureCounts } from "./failures.js";
import { LeaseLog } from "./lease-log.js";
import { outcomeOf, planLease, runLoops, runWorkerProcess, sleep, useLease } from "./loop.js";
import type { LeasePlan, LeaseUse } from "./loop.js";
import { codeOf, Replicas, trailerOf } from "./replicas.js";
import { StubLease } from "./stub-lease.js";

/** How long past max_wait an acquire call may take before it counts as unanswered. */
const CALL_SLACK_MS = 2_000;
/** How long one acquire keeps trying replicas that cannot serve before it gives up. */
const FAILOVER_BUDGET_MS = 5_000;

runWorkerProcess("chaos stub worker", async () => {
  const config = readConfig();
  const log = new LeaseLog(config.logFile, { worker: config.workerId, gen: config.gen });
  const failures = new FailureCounts();
  const replicas = new Replicas(config.brokers);
  try {
    await runLoops({
      config,
      grants: () => log.grants,
      failures,
      oneLease: async (random) => {
        const plan = planLease(config, random);
        const got = await acquire({ replicas, config, failures, plan });
        if (got.kind === "none") {
          await sleep(got.pauseMs);
          return;
        }
        await hold({ replicas, config, log, plan, lease: got.lease, sentAt: got.sentAt });
      },
    });
  } finally {
    replicas.close();
    log.close();
  }
});

type Acquired =
  | { readonly kind: "granted"; readonly lease: WireLease; readonly sentAt: number }
  | { readonly kind: "none"; readonly pauseMs: number };

/**
 * AcquireLease for the plan's first URL. A replica that cannot serve is left for the next, with
 * the same request_id (a grant whose answer was lost comes back, not a second lease). The lease's
 * deadline counts from the earliest attempt that may have been granted: one sent less than a TTL
 * before the answer (an older grant would have expired, and is not answered again).
 */
async function acquire(o: {
  readonly replicas: Replicas;
  readonly config: WorkerConfig;
  readonly failures: FailureCounts;
  readonly plan: LeasePlan;
}): Promise<Acquired> {
  const { replicas, config, failures } = o;
  const requestId = randomUUID();
  const attempts: number[] = [];
  const giveUpAt = performance.now() + config.maxWaitMs + CALL_SLACK_MS + FAILOVER_BUDGET_MS;
  for (;;) {
    const sentAt = performance.now();
    attempts.push(sentAt);
    try {
      const res = await replicas.current.acquireLease(
        {
          requestId,
          workerId: config.workerId,
          targetUrl: o.plan.urls[0] ?? o.plan.site.origin,
          ttl: durationFromMs(config.ttlMs),
          maxWait: durationFromMs(config.maxWaitMs),
        },
        { deadline: config.maxWaitMs + CALL_SLACK_MS },
      );
      if (res.lease === undefined) throw new Error("AcquireLease answered without a lease");
      const now = performance.now();
      const earliest = Math.min(...attempts.filter((t) => t >= now - config.ttlMs));
      return { kind: "granted", lease: res.lease, sentAt: Number.isFinite(earliest) ? earliest : sentAt };
    } catch (err) {
      const code = codeOf(err);
      if (code === grpc.status.RESOURCE_EXHAUSTED) {
        failures.add("NO_PROXY");
        const retry = Number(trailerOf(err, "retry-after-ms") ?? "50");
        return { kind: "none", pauseMs: Math.min(200, Math.max(10, Number.isFinite(retry) ? retry : 50)) };
      }
      failures.add(`code ${code}`);
      if (code === grpc.status.INVALID_ARGUMENT) throw err;
      replicas.next();
      if (performance.now() > giveUpAt) return { kind: "none", pauseMs: 100 };
      await sleep(100);
    }
  }
}

/** Log the grant, use the proxy until the plan is done or the lease is gone, release, log the end. */
async function hold(o: {
  readonly replicas: Replicas;
  readonly config: WorkerConfig;
  readonly log: LeaseLog;
  readonly plan: LeasePlan;
  readonly lease: WireLease;
  readonly sentAt: number;
}): Promise<void> {
  const { lease, config } = o;
  const proxy = lease.proxy?.id ?? "";
  const token = lease.fencingToken.toString();
  o.log.grant({ kind: "stub", api: "unary", lease: lease.leaseId, proxy, domain: lease.domain, token, source: "broker", at: Date.now() });
  const held = new StubLease(lease, { replicas: o.replicas, workerId: config.workerId, ttlMs: config.ttlMs, sentAt: o.sentAt });
  let use: LeaseUse | undefined;
  let usedUntil = Date.now();
  try {
    use = await useLease({ proxy, plan: o.plan, signal: held.signal, timeoutMs: config.requestTimeoutMs });
  } finally {
    usedUntil = Date.now();
    const ended = await held.release(use === undefined ? { kind: "ABANDONED", httpStatus: 0 } : outcomeOf(use));
    const detail = ended.detail ?? use?.error;
    o.log.end({
      lease: lease.leaseId,
      finalLease: lease.leaseId,
      finalToken: token,
      finalSource: "broker",
      at: usedUntil,
      releasedAt: Date.now(),
      how: ended.how,
      ...(detail !== undefined ? { detail } : {}),
      requests: use?.requests ?? 0,
      pages: use?.pages ?? 0,
    });
  }
}
