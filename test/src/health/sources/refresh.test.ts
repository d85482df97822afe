import { mkdtemp, writeFile } from "node:fs/promises";
import { headersReader } from "../../../../src/health/sources/headers.js";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { DEFAULT_SCORING } from "@proxybroker/sdk/model";
import type { SourceSpec, SourceView } from "@proxybroker/sdk/model";
import { LeaderElector } from "../../../../src/health/leader.js";
import { SourceRefresher } from "../../../../src/health/sources/refresh.js";
import type { RefreshOutcome, SourceRefresherOptions } from "../../../../src/health/sources/refresh.js";
import { SourceRunner } from "../../../../src/health/sources/runner.js";
import { createRedisClient, RedisStore } from "../../../../src/store/redis/index.js";
import { proxyLines, startListServer } from "../../../support/list-server.js";
import type { ListServer } from "../../../support/list-server.js";
import { withRedis } from "../../../support/with-redis.js";
import { acq, granted, outcome } from "../../../sdk/engine/conformance/harness.js";

const redis = withRedis();
let store: RedisStore;
let list: ListServer;
let now = 1_000_000;
let n = 0;

beforeAll(async () => {
  store = new RedisStore({ client: createRedisClient({ url: redis.url() }), scoring: DEFAULT_SCORING, clock: () => now });
  list = await startListServer();
});
afterAll(async () => {
  await list.close();
  await store.close();
});

/** A new pool with one source of the list server. */
async function newSource(extra: Partial<SourceSpec> = {}): Promise<SourceSpec> {
  const pool = `p${++n}`;
  const spec: SourceSpec = {
    id: `s${n}`,
    pool,
    url: list.url,
    format: "lines",
    jsonPath: "",
    headersFile: "",
    intervalMs: 60_000,
    tier: "",
    labels: { from: "src" },
    createdAt: now,
    ...extra,
  };
  await store.putSource(spec);
  return spec;
}

async function view(spec: SourceSpec): Promise<SourceView> {
  const found = (await store.listSources(spec.pool)).find((s) => s.id === spec.id);
  if (found === undefined) throw new Error(`source ${spec.id} is gone`);
  return found;
}

async function ids(pool: string): Promise<string[]> {
  return (await store.listProxies(pool, { size: 1000, after: "" })).proxies.map((p) => p.id);
}

function refresher(opts: Partial<SourceRefresherOptions> = {}): SourceRefresher {
  return new SourceRefresher({
    store,
    maxShrink: 0.5,
    fetchTimeoutMs: 2_000,
    maxBytes: 1 << 20,
    readHeaders: headersReader(tmpdir()),
    clock: () => now,
    ...opts,
  });
}

describe("source refresh (Redis, a list server on loopback)", () => {
  it("adds what appears, removes what it added and vanished, never a proxy added by hand", async () => {
    const spec = await newSource();
    await store.addProxies(spec.pool, [
      { id: "9.9.9.9:1", url: "http://9.9.9.9:1", tier: "", labels: {} },
      { id: "10.0.0.1:8080", url: "http://10.0.0.1:8080", tier: "", labels: {} },
    ]);
    const probed: string[][] = [];
    const r = refresher({ probe: async (_pool, added) => probed.push([...added]) });
    list.answer(200, proxyLines(3));
    const first = await r.refresh(await view(spec));
    expect(first).toMatchObject({ result: "ok", listed: 3, added: ["10.0.0.0:8080", "10.0.0.2:8080"], removed: [] });
    expect(probed).toEqual([["10.0.0.0:8080", "10.0.0.2:8080"]]);
    expect((await store.listProxies(spec.pool, { size: 10, after: "" })).proxies.find((p) => p.id === "10.0.0.0:8080")?.labels).toEqual({
      from: "src",
    });
    // 10.0.0.0 and 10.0.0.1 (the hand-added one) vanish; 10.0.0.3 appears
    list.answer(200, proxyLines(2, 2));
    now += 60_000;
    const second = await r.refresh(await view(spec));
    expect(second).toMatchObject({ result: "ok", listed: 2, added: ["10.0.0.3:8080"], removed: ["10.0.0.0:8080"] });
    expect(await ids(spec.pool)).toEqual(["10.0.0.1:8080", "10.0.0.2:8080", "10.0.0.3:8080", "9.9.9.9:1"]);
    expect((await store.sourceMembers(spec.pool, spec.id)).sort()).toEqual(["10.0.0.2:8080", "10.0.0.3:8080"]);
    expect((await view(spec)).status).toMatchObject({ result: "ok", listed: 2, added: 1, removed: 1, lastSuccessAt: now });
    const audit = await store.listAudit(5);
    expect(audit[0]).toMatchObject({ actor: "source-refresh", method: "RefreshSource", pool: spec.pool });
    expect(audit[0]?.detail).toContain("2 listed, 1 added, 1 removed");
  });

  it("a vanished proxy drains: no new grants, its live lease renews and releases as before", async () => {
    const spec = await newSource();
    list.answer(200, proxyLines(2));
    await refresher().refresh(await view(spec));
    const lease = granted(await store.acquire(acq({ pool: spec.pool, requestId: "r1" })));
    const [other] = ["10.0.0.0:8080", "10.0.0.1:8080"].filter((id) => id !== lease.proxy.id);
    list.answer(200, `${other}\n`);

    expect(await refresher().refresh(await view(spec))).toMatchObject({ result: "ok", removed: [lease.proxy.id] });
    // the other proxy is granted for another domain-key, then nothing is left: the removed one is not
    expect(granted(await store.acquire(acq({ pool: spec.pool, domainKey: "b.example", requestId: "r2" }))).proxy.id).toBe(other);
    expect((await store.acquire(acq({ pool: spec.pool, domainKey: "b.example", workerId: "w3", requestId: "r3" }))).kind).toBe("denied");
    expect((await store.renew({ leaseId: lease.leaseId, fencingToken: lease.fencingToken, ttlMs: 30_000 })).kind).toBe("renewed");
    expect((await store.release({ leaseId: lease.leaseId, fencingToken: lease.fencingToken, outcome: outcome("SUCCESS") })).kind).toBe(
      "released",
    );
  });

  it("reads a JSON answer at its path, objects' field included", async () => {
    const spec = await newSource({ format: "json", jsonPath: "data.items[].proxy" });
    list.answer(200, JSON.stringify({ data: { items: [{ proxy: "10.9.0.1:80" }, { proxy: "socks5://u:p@10.9.0.2:1080" }] } }));
    expect(await refresher().refresh(await view(spec))).toMatchObject({ result: "ok", listed: 2 });
    // (a proxy with a username is its own id: docs/spec.md §11)
    expect(await ids(spec.pool)).toEqual(["10.9.0.1:80", "u@10.9.0.2:1080"]);
  });

  it("a failed fetch, a malformed answer, a list shrunk past the bound change nothing and say so", async () => {
    const spec = await newSource();
    const seen: RefreshOutcome[] = [];
    const r = refresher({ onRefreshed: (_s, o) => seen.push(o) });
    list.answer(200, proxyLines(10));
    await r.refresh(await view(spec));
    const before = await ids(spec.pool);
    expect(before).toHaveLength(10);
    const cases: [number, string, string, RegExp][] = [
      [503, "busy", "fetch_error", /HTTP 503/],
      [200, "1.2.3.4:80\nnot a proxy at all\n", "malformed", /line 2/],
      [200, proxyLines(4), "shrink", /lists 4 proxies, 10 before/],
    ];
    for (const [status, body, result, error] of cases) {
      list.answer(status, body);
      now += 1_000;
      const o = await r.refresh(await view(spec));
      expect(o.result).toBe(result);
      expect(o.error).toMatch(error);
      expect(await ids(spec.pool)).toEqual(before);
      const st = (await view(spec)).status;
      expect(st).toMatchObject({
        result,
        listed: 10,
        lastRefreshAt: now,
        lastSuccessAt: now - (cases.findIndex((c) => c[2] === result) + 1) * 1_000,
      });
      const [entry] = await store.listAudit(1);
      expect(entry?.detail).toMatch(new RegExp(`source ${spec.id}: ${result}: .*nothing changed`));
    }
    expect(seen.map((o) => o.result)).toEqual(["ok", "fetch_error", "malformed", "shrink"]);
    // within the bound (10 → 6) it applies
    list.answer(200, proxyLines(6));
    expect(await r.refresh(await view(spec))).toMatchObject({ result: "ok", removed: expect.arrayContaining(["10.0.0.9:8080"]) });
    expect(await ids(spec.pool)).toHaveLength(6);
  });

  it("sends the headers of the file, which appear nowhere: not in the source, its status, the audit, or Redis", async () => {
    const secret = "k3y-9f8e7d6c5b4a";
    const dir = await mkdtemp(join(tmpdir(), "pb-src-"));
    const headersFile = join(dir, "headers");
    await writeFile(headersFile, `X-Api-Key: ${secret}\n`);
    const spec = await newSource({ headersFile });
    list.answer(200, proxyLines(2));
    expect((await refresher().refresh(await view(spec))).result).toBe("ok");
    expect(list.requests.at(-1)?.["x-api-key"]).toBe(secret);
    await writeFile(headersFile, `X-Api-Key ${secret}\n`);
    expect((await refresher().refresh(await view(spec))).error).not.toContain(secret);
    expect(JSON.stringify(await store.listSources(spec.pool))).not.toContain(secret);
    expect(JSON.stringify(await store.listAudit(50))).not.toContain(secret);
    const admin = redis.admin();
    const keys: string[] = await admin.keys("*");
    expect(keys.some((k) => k.includes(`{${spec.pool}}:src`))).toBe(true);
    for (const key of keys) {
      const type = await admin.type(key);
      const value =
        type === "string"
          ? await admin.get(key)
          : type === "hash"
            ? await admin.hgetall(key)
            : type === "set"
              ? await admin.smembers(key)
              : type === "zset"
                ? await admin.zrange(key, "0", "-1")
                : type === "stream"
                  ? await admin.xrange(key, "-", "+")
                  : type === "list"
                    ? await admin.lrange(key, "0", "-1")
                    : "";
      expect(JSON.stringify(value), key).not.toContain(secret);
    }
  });

  it("only the health checker's leader refreshes, each source once per interval", async () => {
    const spec = await newSource();
    list.answer(200, proxyLines(1));
    const electors = ["a", "b"].map((owner) => new LeaderElector({ store, name: `sources-${spec.pool}`, owner, ttlMs: 5_000 }));
    for (const e of electors) e.start();
    await vi.waitFor(() => expect(electors.filter((e) => e.leader)).toHaveLength(1));
    const runners = electors.map(
      (e) =>
        new SourceRunner({
          store,
          refresher: refresher(),
          pools: () => [spec.pool],
          isLeader: () => e.leader,
          tickMs: 1_000,
          clock: () => now,
        }),
    );
    const asked = list.requests.length;
    const done = await Promise.all(runners.map((r) => r.tick()));
    expect(done.map((d) => d.length).sort()).toEqual([0, 1]);
    expect(list.requests.length).toBe(asked + 1);
    // not due again before its interval
    expect((await Promise.all(runners.map((r) => r.tick()))).flat()).toHaveLength(0);
    now += 60_000;
    expect((await Promise.all(runners.map((r) => r.tick()))).flat()).toHaveLength(1);
    await Promise.all(electors.map((e) => e.stop()));
  });
});
