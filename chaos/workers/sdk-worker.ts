/**
 * Chaos worker on the SDK: `ProxyBrokerClient` (every replica in one gRPC target, or one
 * replica's address; heartbeats on, the circuit breaker and the fallback pool as shipped; its
 * `mode` and `breaker` events go to the log too), half its leases through `withLease`, half through
 * `acquire` + `release`. Each lease fetches its plan (crawl/sites.ts pages, or one long stream)
 * through the leased proxy and stops when the lease's signal aborts. Lease log: chaos/records.ts.
 */
import { BrokerClientError, LeaseLostError, NoProxyAvailableError, ProxyBrokerClient } from "@proxybroker/sdk";
import type { Lease } from "@proxybroker/sdk";
import type { LeaseApi } from "../records.js";
import { readConfig } from "./config.js";
import type { WorkerConfig } from "./config.js";
import { LeaseLog } from "./lease-log.js";
import { outcomeOf, planLease, runLoops, runWorkerProcess, sleep, useLease } from "./loop.js";
import type { LeasePlan, LeaseUse } from "./loop.js";
import { FailureCounts } from "./failures.js";

runWorkerProcess("chaos sdk worker", async () => {
  const config = readConfig();
  const first = config.brokers[0];
  if (first === undefined) throw new Error("no broker address");
  const address = config.sdkAddress === "all" && config.brokers.length > 1 ? `ipv4:${config.brokers.join(",")}` : first;
  const log = new LeaseLog(config.logFile, { worker: config.workerId, gen: config.gen });
  const failures = new FailureCounts();
  const client = new ProxyBrokerClient({
    address,
    workerId: config.workerId,
    ttlMs: config.ttlMs,
    fallback: { enabled: config.sdkFallback },
  });
  client.on("mode", (value) => log.event({ event: "mode", value, at: Date.now() }));
  client.on("breaker", (value) => log.event({ event: "breaker", value, at: Date.now() }));
  try {
    await runLoops({
      config,
      grants: () => log.grants,
      failures,
      oneLease: async (random) => {
        const plan = planLease(config, random);
        const api: LeaseApi = random() < 0.5 ? "withLease" : "acquire";
        try {
          if (api === "withLease") await withLeaseOnce({ client, config, log, plan });
          else await acquireOnce({ client, config, log, plan });
        } catch (err) {
          await pauseAfter(err, failures);
        }
      },
    });
  } finally {
    await client.close();
    log.close();
  }
});

interface Once {
  readonly client: ProxyBrokerClient;
  readonly config: WorkerConfig;
  readonly log: LeaseLog;
  readonly plan: LeasePlan;
}

/** Log the grant of an SDK lease. */
function logGrant(log: LeaseLog, lease: Lease, api: LeaseApi): void {
  log.grant({
    kind: "sdk",
    api,
    lease: lease.id,
    proxy: lease.proxy.id,
    domain: lease.domain,
    token: String(lease.fencingToken),
    source: lease.source,
    at: Date.now(),
  });
}

/** Log the end of an SDK lease: under which identity it ended (a hand-over changes it) and how. */
function logEnd(log: LeaseLog, lease: Lease, first: string, use: LeaseUse | undefined, usedUntil: number): void {
  const reason: unknown = lease.signal.aborted ? lease.signal.reason : undefined;
  log.end({
    lease: first,
    finalLease: lease.id,
    finalToken: String(lease.fencingToken),
    finalSource: lease.source,
    at: usedUntil,
    releasedAt: Date.now(),
    how: reason !== undefined ? "lost" : "released",
    ...(reason instanceof Error ? { detail: reason.message } : use?.error !== undefined ? { detail: use.error } : {}),
    requests: use?.requests ?? 0,
    pages: use?.pages ?? 0,
  });
}

async function withLeaseOnce(o: Once): Promise<void> {
  let held: { readonly lease: Lease; readonly first: string } | undefined;
  let use: LeaseUse | undefined;
  let usedUntil = 0;
  const target = o.plan.urls[0] ?? o.plan.site.origin;
  try {
    await o.client.withLease(
      target,
      async (lease) => {
        held = { lease, first: lease.id };
        logGrant(o.log, lease, "withLease");
        try {
          use = await useLease({ proxy: lease.proxy.id, plan: o.plan, signal: lease.signal, timeoutMs: o.config.requestTimeoutMs });
        } finally {
          usedUntil = Date.now();
        }
        return { outcome: outcomeOf(use) };
      },
      { ttlMs: o.config.ttlMs, maxWaitMs: o.config.maxWaitMs },
    );
  } finally {
    // withLease has released (or the lease was lost) by the time it settles
    if (held !== undefined) logEnd(o.log, held.lease, held.first, use, usedUntil);
  }
}

async function acquireOnce(o: Once): Promise<void> {
  const target = o.plan.urls[0] ?? o.plan.site.origin;
  const lease = await o.client.acquire(target, { ttlMs: o.config.ttlMs, maxWaitMs: o.config.maxWaitMs });
  const first = lease.id;
  logGrant(o.log, lease, "acquire");
  let use: LeaseUse | undefined;
  let usedUntil = 0;
  try {
    use = await useLease({ proxy: lease.proxy.id, plan: o.plan, signal: lease.signal, timeoutMs: o.config.requestTimeoutMs });
  } finally {
    usedUntil = Date.now();
    const outcome = use === undefined ? { kind: "ABANDONED" as const } : outcomeOf(use);
    await lease.release(outcome).catch(() => undefined);
    logEnd(o.log, lease, first, use, usedUntil);
  }
}

/** After a failed acquire: count it, and pause as its kind asks. */
async function pauseAfter(err: unknown, failures: FailureCounts): Promise<void> {
  if (err instanceof NoProxyAvailableError) {
    failures.add("NO_PROXY");
    await sleep(Math.min(200, Math.max(10, err.retryAfterMs)));
    return;
  }
  // A lost lease (a BrokerClientError too) is counted by its name, as before it was one.
  if (err instanceof BrokerClientError && !(err instanceof LeaseLostError)) {
    failures.add(`code ${err.code}`);
    await sleep(100);
    return;
  }
  failures.add(err instanceof Error ? err.name : "unknown");
  process.stderr.write(`chaos sdk worker: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  await sleep(100);
}
