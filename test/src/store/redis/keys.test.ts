/**
 * keys.ts is the one place key names are built: the keys of no pool (leader leases, the audit
 * trail) and a pool's event stream and release channel too, and the store uses exactly those.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_SCORING } from "@proxybroker/sdk/model";
import { createRedisClient, KeyBuilder, RedisStore } from "../../../../src/store/redis/index.js";
import { startRedisServer, type RedisServer } from "../../../support/redis-server.js";

describe("KeyBuilder", () => {
  it("builds the keys of no pool under the prefix, a leader lease's two keys under one hash tag", () => {
    for (const prefix of ["pb", "pb:"]) {
      const keys = new KeyBuilder(prefix);
      expect(keys.leader("health")).toEqual(["pb:{leader}:health", "pb:{leader}:health:t"]);
      expect(keys.audit).toBe("pb:audit");
    }
  });

  it("builds a pool's event stream and release channel from the pool's base", () => {
    const keys = new KeyBuilder("x").pool("default");
    expect(keys.events).toBe("x:{default}:evs");
    expect(keys.releaseChannel("shop.example.com")).toBe("x:{default}:ev:shop.example.com");
  });
});

describe("the store's keys of no pool", () => {
  let server: RedisServer;
  let admin: Redis;

  beforeAll(async () => {
    server = await startRedisServer();
    admin = new Redis(server.url, { maxRetriesPerRequest: 1 });
  });

  afterAll(async () => {
    admin?.disconnect();
    await server?.stop();
  });

  it("a campaign writes the leader keys of KeyBuilder, an audit entry its audit key, an event the pool's stream", async () => {
    const prefix = `pbt-${randomBytes(6).toString("hex")}`;
    const store = new RedisStore({ client: createRedisClient({ url: server.url }), scoring: DEFAULT_SCORING, prefix });
    try {
      const keys = new KeyBuilder(prefix);
      const [holder, term] = keys.leader("health");
      const won = await store.campaign("health", "me", 5_000);
      expect(won.leader).toBe(true);
      expect(await admin.get(holder)).toMatch(/^me\n/);
      expect(Number(await admin.get(term))).toBe(won.term);
      await store.appendAudit({ actor: "a", method: "M", pool: "default", detail: "" });
      expect(await admin.xlen(keys.audit)).toBe(1);
      await store.appendEvent("default", { kind: "BAN", proxyId: "p", domainKey: "d", detail: "" });
      expect(await admin.xlen(keys.pool("default").events)).toBe(1);
      expect(await admin.keys(`${prefix}:*`)).toHaveLength(4);
    } finally {
      await store.close();
    }
  });
});
