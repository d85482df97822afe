import { describe, expect, it } from "vitest";
import { status } from "@grpc/grpc-js";
import { OutcomeKind } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { statusOf } from "../../support/grpc-status.js";
import { withBroker } from "../../support/with-broker.js";

const TEMPLATE = {
  url: "http://cust-{session}-country-{country}:SECRET@gw.example:7777",
  sessions: 3,
  labels: [{ key: "country", values: ["us", "de"] }],
  tier: "residential",
};

/** AddProxies through real gRPC: usernames in ids, templates, rejected entries by index (docs/spec.md §11). */
describe.each([
  { name: "embedded", kind: "embedded" as const },
  { name: "redis", kind: "redis" as const },
  { name: "redis, 4 shards", kind: "redis" as const, shards: 4 },
])("AddProxies ($name store)", ({ kind, shards }) => {
  const b = withBroker({ kind, ...(shards === undefined ? {} : { shards }) });

  it("a template adds N sessions per label value; a label filter picks a country; again it adds nothing", async () => {
    const pool = "tpl";
    const r = await b.admin.addProxies({ pool, template: TEMPLATE });
    expect(r.rejected).toEqual([]);
    expect(r.added).toHaveLength(6);
    expect(r.added).toContain("cust-sus00001-country-us@gw.example:7777");
    expect(r.added).toContain("cust-sde00003-country-de@gw.example:7777");
    expect(r.added.join(" ")).not.toContain("SECRET");
    const de = await b.broker.acquireLease({ pool, domain: "shop.example", labels: { country: "de" }, tier: "residential" });
    expect(de.lease?.proxy?.id).toMatch(/^cust-sde0000[123]-country-de@gw\.example:7777$/);
    expect(de.lease?.proxy?.url).toContain(":SECRET@");
    expect(de.lease?.proxy?.labels).toEqual({ country: "de" });
    const again = await b.admin.addProxies({ pool, template: TEMPLATE });
    expect({ added: again.added, updated: [...again.updated].sort() }).toEqual({ added: [], updated: [...r.added].sort() });
  });

  it("an id with a username is taken wherever ids are: acquire by proxy_id, disable, remove", async () => {
    const pool = "ids";
    const id = "john%40example.com@10.5.0.1:3128";
    expect((await b.admin.addProxies({ pool, proxies: [{ url: "http://john%40example.com:pw@10.5.0.1:3128" }] })).added).toEqual([id]);
    const l = await b.broker.acquireLease({ pool, domain: "shop.example", proxyId: id });
    expect(l.lease?.proxy?.id).toBe(id);
    await b.broker.releaseLease({
      leaseId: l.lease?.leaseId ?? "",
      fencingToken: l.lease?.fencingToken ?? 0n,
      outcome: { kind: OutcomeKind.SUCCESS },
    });
    expect((await b.admin.disableProxies({ pool, ids: [id] })).result?.changed).toEqual([id]);
    expect((await b.admin.removeProxies({ pool, ids: [id] })).removed).toEqual([id]);
  });

  it("a template goes with plain specs; rejected entries carry their index and no password", async () => {
    const pool = "mixed";
    const r = await b.admin.addProxies({
      pool,
      proxies: [{ url: "http://u1:pw@10.2.0.1:3128" }, { url: "http://u1:topsecret@10.2.0.1" }, { url: "http://u1:other@10.2.0.1:3128" }],
      template: { url: "http://t-{session}:PW@gw.example:1", sessions: 2 },
    });
    expect(r.added).toEqual(["u1@10.2.0.1:3128", "t-s00001@gw.example:1", "t-s00002@gw.example:1"]);
    expect(r.rejected.map((x) => ({ index: x.index, url: x.url }))).toEqual([
      { index: 1, url: "http://u1:***@10.2.0.1" },
      { index: 2, url: "http://u1:***@10.2.0.1:3128" },
    ]);
    expect(r.rejected[1]?.reason).toMatch(/appears twice/);
    expect(JSON.stringify(r.rejected)).not.toMatch(/topsecret|other/);
  });

  it("a bad template is INVALID_ARGUMENT saying why; so is one that makes too many proxies", async () => {
    const cases: [typeof TEMPLATE, RegExp][] = [
      [{ ...TEMPLATE, url: "http://c-{sesion}:PW@gw.example:1" }, /template: .*unknown placeholder at character 10:/],
      [{ ...TEMPLATE, url: "http://c-{country}:PW@gw.example:1" }, /needs \{session\}/],
      [{ ...TEMPLATE, sessions: 6_000 }, /makes 12000 proxies; at most 10000/],
    ];
    for (const [template, message] of cases) {
      const err = await statusOf(b.admin.addProxies({ pool: "bad", template }));
      expect(err.code).toBe(status.INVALID_ARGUMENT);
      expect(err.details).toMatch(message);
      expect(err.details).not.toContain("PW@");
    }
    const tooMany = await statusOf(
      b.admin.addProxies({ pool: "bad", proxies: [{ url: "10.3.0.1:1" }], template: { ...TEMPLATE, sessions: 5_000 } }),
    );
    expect(tooMany.details).toMatch(/at most 10000 proxies per call, got 10001/);
    expect((await b.admin.listProxies({ pool: "bad" })).proxies).toEqual([]);
  });
});
