/**
 * ReportOutcomes over real gRPC (src/grpc/report-outcomes.ts, docs/spec.md §8): a worker's reports
 * apply only on pairs it held — a lease granted to it lately, or a pair its acknowledged fallback
 * claim names — with cool-downs and bans cut to the reports' caps, and every call that applied or
 * refused something is in the audit trail. On the embedded store and on Redis.
 */
import { afterEach, describe, expect, it } from "vitest";
import * as grpc from "@grpc/grpc-js";
import { durationFromMs, timestampFromMs } from "@bufbuild/protobuf/wkt";
import { OutcomeKind } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { MIN_TOKEN_LENGTH, TokenTable } from "../../../src/security/tokens.js";
import { startBroker, type StoreKind, type TestBroker } from "../../support/broker.js";
import { withRedis } from "../../support/with-redis.js";
import { StreamClient } from "../../support/stream-client.js";

const WORKER = "w".repeat(MIN_TOKEN_LENGTH);
const ADMIN = "A".repeat(MIN_TOKEN_LENGTH);
const TABLE = TokenTable.parse(`${WORKER} worker fleet\n${ADMIN} admin ops\n`);
const SITE = "shop.example.com";
const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

function bearer(token: string): { metadata: grpc.Metadata } {
  const metadata = new grpc.Metadata();
  metadata.set("authorization", `Bearer ${token}`);
  return { metadata };
}

/** A day's cool-down and a ban: what the attack reported. */
function attack(proxyId: string) {
  return [
    { proxyId, domain: SITE, outcome: { kind: OutcomeKind.RATE_LIMITED, httpStatus: 429, retryAfter: durationFromMs(DAY_MS) } },
    { proxyId, domain: SITE, outcome: { kind: OutcomeKind.BLOCKED, httpStatus: 403 } },
  ];
}

/** The trailer `retry-after-ms` of a refused acquire (-1: it was granted). */
async function retryAfterOf(call: Promise<unknown>): Promise<number> {
  try {
    await call;
    return -1;
  } catch (err) {
    const md = (err as grpc.ServiceError).metadata;
    return Number(md?.get("retry-after-ms")[0] ?? Number.NaN);
  }
}

describe.each(["embedded", "redis"] as const)("ReportOutcomes (%s store)", (kind: StoreKind) => {
  const redis = kind === "redis" ? withRedis() : undefined;
  let b: TestBroker | undefined;
  afterEach(async () => {
    await b?.stop();
    b = undefined;
  });

  async function start(tokens = true): Promise<TestBroker> {
    b = await startBroker({ kind, ...(redis === undefined ? {} : { redisUrl: redis.url() }), ...(tokens ? { tokens: TABLE } : {}) });
    await b.admin.addProxies({ proxies: [{ url: "10.5.0.1:8080" }] }, tokens ? bearer(ADMIN) : {});
    return b;
  }

  it("a worker token's reports on a pair its worker never leased apply nothing, and the next acquire is not delayed", async () => {
    const broker = await start();
    const answer = await broker.broker.reportOutcomes(
      { pool: "default", workerId: "intruder", outcomes: attack("10.5.0.1:8080") },
      bearer(WORKER),
    );
    expect(answer).toMatchObject({ applied: 0, notHeld: 2 });
    const lease = await broker.broker.acquireLease({ workerId: "crawler", domain: SITE }, bearer(WORKER));
    expect(lease.lease?.proxy?.id).toBe("10.5.0.1:8080");
    const { proxies } = await broker.admin.listProxies({ pool: "default" }, bearer(ADMIN));
    expect(proxies[0]).toMatchObject({ score: 50, failureCount: 0n });
    // refused, and audited all the same
    const { entries } = await broker.admin.listAudit({ limit: 10 }, bearer(ADMIN));
    const line = entries.find((e) => e.method === "ReportOutcomes");
    expect(line).toMatchObject({ actor: "fleet", pool: "default" });
    expect(line?.detail).toMatch(/worker\(s\) intruder: applied 0.*2 on pairs not held/);
  });

  it("a worker's reports on the pair it held apply, cut to the reports' caps, and are audited", async () => {
    const broker = await start();
    const held = await broker.broker.acquireLease({ workerId: "crawler", domain: SITE }, bearer(WORKER));
    const lease = held.lease!;
    await broker.broker.releaseLease(
      { leaseId: lease.leaseId, fencingToken: lease.fencingToken, outcome: { kind: OutcomeKind.SUCCESS } },
      bearer(WORKER),
    );
    const answer = await broker.broker.reportOutcomes(
      { pool: "default", workerId: "crawler", outcomes: attack("10.5.0.1:8080") },
      bearer(WORKER),
    );
    expect(answer).toMatchObject({ applied: 2, notHeld: 0 });
    // banned for an hour at most (REPORT_MAX_BAN_MS), not the day the report asked for
    const wait = await retryAfterOf(broker.broker.acquireLease({ workerId: "crawler", domain: SITE }, bearer(WORKER)));
    expect(wait).toBeGreaterThan(HOUR_MS - 60_000);
    expect(wait).toBeLessThanOrEqual(HOUR_MS);
    const { entries } = await broker.admin.listAudit({ limit: 10 }, bearer(ADMIN));
    const line = entries.find((e) => e.method === "ReportOutcomes");
    expect(line).toMatchObject({ actor: "fleet", pool: "default" });
    expect(line?.detail).toMatch(
      /worker\(s\) crawler: applied 2 \((RATE_LIMITED 1, BLOCKED 1|BLOCKED 1, RATE_LIMITED 1)\), 0 of them under a fallback claim; 0 on pairs not held/,
    );
    // a report's ban is a pair's BAN event, never an admin action
    const { proxies } = await broker.admin.listProxies({ pool: "default" }, bearer(ADMIN));
    expect(proxies[0]?.state).not.toBe(3);
  });

  it("reports on a pair the worker's acknowledged fallback claim names apply without a lease", async () => {
    const broker = await start(false);
    const stream = new StreamClient(broker.broker);
    const claim = {
      version: 1n,
      members: ["fallen"],
      keys: [{ domain: SITE, shareKey: SITE, whole: true, untilTime: timestampFromMs(Date.now() + 600_000) }],
    };
    const pong = await stream.ping({ workerId: "fallen", pool: "default", fallbackPool: true, claim });
    expect(pong.case === "pong" && pong.value.claimVersion).toBe(1n);
    const answer = await broker.broker.reportOutcomes({
      pool: "default",
      workerId: "fallen",
      outcomes: [
        { proxyId: "10.5.0.1:8080", domain: SITE, outcome: { kind: OutcomeKind.RATE_LIMITED, retryAfter: durationFromMs(DAY_MS) } },
        // another domain-key: not claimed
        { proxyId: "10.5.0.1:8080", domain: "other.example", outcome: { kind: OutcomeKind.BLOCKED } },
      ],
    });
    expect(answer).toMatchObject({ applied: 1, notHeld: 1 });
    // cooled down for REPORT_MAX_COOL_DOWN_MS (5 min) at most, not a day (asked by the claim's
    // worker: a silent worker's claim is reserved for it)
    const wait = await retryAfterOf(broker.broker.acquireLease({ workerId: "fallen", domain: SITE }));
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(300_000);
    expect(await retryAfterOf(broker.broker.acquireLease({ workerId: "other", domain: "other.example" }))).toBe(-1);
    stream.cancel();
  });
});
