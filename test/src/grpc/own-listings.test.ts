/**
 * A worker's own domain-key listings in the snapshots it fetches (docs/spec.md §7,
 * src/lease/own-listings.ts): the broker names a worker with a domain-key in that worker's own
 * lists only once every other worker still listed with a key of the same share key surely saw
 * the use; every other worker sees it at once.
 */
import * as grpc from "@grpc/grpc-js";
import { durationMs, timestampFromMs, timestampMs } from "@bufbuild/protobuf/wkt";
import { afterEach, describe, expect, it } from "vitest";
import { ProxyAdmin } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import { OutcomeKind, ProxyBroker } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import type { GetPoolSnapshotResponse } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { MemoryStore } from "@proxybroker/sdk/engine";
import { DEFAULT_SCORING } from "@proxybroker/sdk/model";
import { createClient } from "@proxybroker/sdk/wire";
import type { ClientOf } from "@proxybroker/sdk/wire";
import { BrokerServer } from "../../../src/server/broker-server.js";
import { TEST_SETTINGS } from "../../support/broker.js";
import { fakeClock, type FakeClock } from "../../support/fake-clock.js";

const POOL = "default";
const ABSENT_MS = 8_000;
const FALLBACK_WINDOW_MS = 600_000;

interface Setup {
  readonly clock: FakeClock;
  readonly broker: ClientOf<typeof ProxyBroker>;
  readonly admin: ClientOf<typeof ProxyAdmin>;
  stop(): Promise<void>;
}

let setup: Setup | undefined;
afterEach(async () => {
  await setup?.stop();
  setup = undefined;
});

/** A broker on a memory store, both on a fake clock. */
async function start(): Promise<Setup> {
  const clock = fakeClock();
  const store = new MemoryStore({ scoring: DEFAULT_SCORING, clock: () => clock.now() });
  const server = await BrokerServer.start({
    store,
    settings: { ...TEST_SETTINGS, workerAbsentAfterMs: ABSENT_MS, fallbackWindowMs: FALLBACK_WINDOW_MS },
    clock: () => clock.now(),
  });
  const channel = new grpc.Client(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
  const admin = createClient(ProxyAdmin, channel);
  await admin.addProxies({ proxies: Array.from({ length: 6 }, (_, i) => ({ url: `10.7.0.${i + 1}:3128` })) });
  setup = {
    clock,
    broker: createClient(ProxyBroker, channel),
    admin,
    async stop() {
      channel.close();
      await server.shutdown(200);
      await store.close();
    },
  };
  return setup;
}

/** A worker's calls, as the SDK makes them: each fetch says the latest list it holds. */
function worker(s: Setup, workerId: string) {
  let listsAt = 0;
  return {
    /** A membership (workers only); the broker then knows this worker holds it from its next fetch on. */
    async fetch(): Promise<GetPoolSnapshotResponse> {
      const res = await s.broker.getPoolSnapshot({
        pool: POOL,
        workerId,
        workersOnly: true,
        ...(listsAt > 0 ? { listsTime: timestampFromMs(listsAt) } : {}),
      });
      listsAt = timestampMs(res.snapshotTime!);
      return res;
    },
    /** Lease `domain` through the broker and give the lease back (the use is recorded with the grant). */
    async lease(domain: string): Promise<void> {
      const { lease } = await s.broker.acquireLease({ pool: POOL, workerId, domain, fallbackPool: true });
      await s.broker.releaseLease({ leaseId: lease!.leaseId, fencingToken: lease!.fencingToken, outcome: { kind: OutcomeKind.SUCCESS } });
    },
  };
}

/** The domain-keys `res` lists for `workerId`. */
function listed(res: GetPoolSnapshotResponse, workerId: string): string[] {
  return (res.liveWorkers.find((w) => w.workerId === workerId)?.domains ?? []).map((d) => d.domain).sort();
}

/** Past the broker's one-second cache of the uses: the next list reads them again. */
function tick(s: Setup, ms = 1_100): void {
  s.clock.advance(ms);
}

type Worker = ReturnType<typeof worker>;

/**
 * w2 leases `domain` alone, holds two lists that name it so and is cut off; 2 s later w0 takes its
 * first list.
 */
async function aloneThenCutOff(s: Setup, w2: Worker, w0: Worker, domain: string): Promise<void> {
  await w2.fetch();
  await w2.lease(domain);
  tick(s);
  await w2.fetch();
  tick(s);
  await w2.fetch();
  tick(s, 2_000);
  await w0.fetch();
}

describe("a worker's own domain-key listings", () => {
  it("names a worker with a domain-key in its own lists only once a worker cut off alone on it saw the use; others at once", async () => {
    const s = await start();
    const w2 = worker(s, "w2");
    const w0 = worker(s, "w0");
    const w1 = worker(s, "w1");
    // w2 is alone on c.example, and holds a list that names it so; then it is cut off
    await w2.fetch();
    await w2.lease("c.example");
    const w2UsedAt = s.clock.now();
    tick(s);
    expect(listed(await w2.fetch(), "w2")).toEqual(["c.example"]);
    tick(s);
    await w2.fetch();
    // w0 starts on c.example, and on d.example (nobody else's), before the broker counts w2 silent
    tick(s, 2_000);
    await w0.fetch();
    await w0.lease("c.example");
    await w0.lease("d.example");
    for (let i = 0; i < 10; i++) {
      tick(s);
      const own = await w0.fetch();
      // w2's lists never showed w0 on c.example: w0's own lists do not name it with it …
      expect(listed(own, "w0"), `${i}`).toEqual(["d.example"]);
      expect(listed(own, "w2"), `${i}`).toEqual(["c.example"]);
      // … while every other worker sees it at once
      expect(listed(await w1.fetch(), "w0"), `${i}`).toEqual(["c.example", "d.example"]);
    }
    // minutes later (w2 silent, c.example reserved whole for it), still so
    tick(s, 5 * 60_000);
    expect(listed(await w0.fetch(), "w0")).toEqual(["d.example"]);
    // w2's listing ran out (it uses c.example from its fallback pool no longer), w0's not yet:
    // w0's own lists name it with c.example
    s.clock.set(w2UsedAt + FALLBACK_WINDOW_MS + 1);
    expect(listed(await w0.fetch(), "w0")).toEqual(["c.example", "d.example"]);
  });

  it("names it once the other worker said it holds a list made 2 s or more after the use", async () => {
    const s = await start();
    const w2 = worker(s, "w2");
    const w0 = worker(s, "w0");
    await w2.fetch();
    await w2.lease("c.example");
    tick(s);
    await w2.fetch();
    tick(s);
    await w0.fetch();
    await w0.lease("c.example");
    const usedAt = s.clock.now();
    tick(s);
    expect(listed(await w0.fetch(), "w0")).toEqual([]);
    // w2 fetches a list that shows w0 (made 1.1 s after the use): not yet 2 s
    expect(listed(await w2.fetch(), "w0")).toEqual(["c.example"]);
    tick(s);
    // it says it holds that list; w0's own list still lacks it
    await w2.fetch();
    expect(listed(await w0.fetch(), "w0")).toEqual([]);
    tick(s);
    // w2 says it holds the list made 2.2 s after the use: w0's next list names it
    await w2.fetch();
    expect(s.clock.now() - usedAt).toBeLessThan(5_000);
    expect(listed(await w0.fetch(), "w0")).toEqual(["c.example"]);
  });

  it("holds back a key of an isolation group another worker is listed with a key of (share key), not other keys", async () => {
    const s = await start();
    await s.admin.setDomainPolicy({ policy: { pattern: "a.example", isolationGroup: "fraud" } });
    await s.admin.setDomainPolicy({ policy: { pattern: "b.example", isolationGroup: "fraud" } });
    const w2 = worker(s, "w2");
    const w0 = worker(s, "w0");
    await aloneThenCutOff(s, w2, w0, "a.example");
    await w0.lease("b.example");
    await w0.lease("c.example");
    tick(s);
    // w2, alone on #fraud, would use every proxy for a.example: w0 is not named with b.example
    expect(listed(await w0.fetch(), "w0")).toEqual(["c.example"]);
    // the group is gone from the policies: w2's fallback pool may still hold them (it was cut
    // off within POLICY_LAG_MS of the change), so b.example is still held back
    await s.admin.deleteDomainPolicy({ pool: POOL, pattern: "b.example" });
    tick(s);
    expect(listed(await w0.fetch(), "w0")).toEqual(["c.example"]);
  });

  it("groups the keys by the store's policies, also when this broker granted nothing since they changed", async () => {
    const s = await start();
    const w2 = worker(s, "w2");
    const w0 = worker(s, "w0");
    await aloneThenCutOff(s, w2, w0, "a.example");
    await w0.lease("b.example");
    tick(s);
    // two keys, two share keys: nothing to hold back
    expect(listed(await w0.fetch(), "w0")).toEqual(["b.example"]);
    // a.example and b.example become one isolation group (no acquire reloads the broker's copy)
    await s.admin.setDomainPolicy({ policy: { pattern: "a.example", isolationGroup: "fraud" } });
    await s.admin.setDomainPolicy({ policy: { pattern: "b.example", isolationGroup: "fraud" } });
    tick(s);
    expect(listed(await w0.fetch(), "w0")).toEqual([]);
  });

  it("lists every worker's domain-keys at once to a caller that names no worker", async () => {
    const s = await start();
    const w2 = worker(s, "w2");
    const w0 = worker(s, "w0");
    await w2.fetch();
    await w2.lease("c.example");
    tick(s);
    await w0.lease("c.example");
    tick(s);
    const anon = await s.broker.getPoolSnapshot({ pool: POOL, workersOnly: true });
    expect(listed(anon, "w0")).toEqual(["c.example"]);
    expect(listed(anon, "w2")).toEqual(["c.example"]);
    expect(anon.liveWorkers.every((w) => w.domains.every((d) => durationMs(d.expiresIn!) > 0))).toBe(true);
  });
});
