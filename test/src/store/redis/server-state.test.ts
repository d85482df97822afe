/**
 * How the broker reads a Redis server's id and durability: what it cannot read now is
 * unavailable (tried again), never "may lose writes", which would hold every grant for a TTL.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StoreUnavailableError } from "@proxybroker/sdk/engine";
import { fsyncAlways, inspect } from "../../../../src/store/redis/server-state.js";
import { startRedisServer, type RedisServer } from "../../../support/redis-server.js";

describe("a Redis server's durability as the broker reads it", () => {
  let dir: string;
  let server: RedisServer;
  let admin: Redis;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "pb-server-state-"));
    server = await startRedisServer({ persistence: { dir, appendfsync: "always" } });
    admin = new Redis(server.url, { maxRetriesPerRequest: 1 });
    // a user who may read INFO but not CONFIG, as on a managed Redis
    await admin.call("ACL", "SETUSER", "noconfig", "on", ">pw", "~*", "+@all", "-config");
  });

  afterAll(async () => {
    admin?.disconnect();
    await server?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it("is durable with AOF and appendfsync always; everysec is not", async () => {
    expect(await inspect(admin)).toMatchObject({ durable: true });
    await admin.config("SET", "appendfsync", "everysec");
    try {
      expect(await inspect(admin)).toMatchObject({ durable: false });
    } finally {
      await admin.config("SET", "appendfsync", "always");
    }
  });

  it("is unknown, so not durable, when CONFIG is refused", async () => {
    const user = new Redis(`redis://noconfig:pw@127.0.0.1:${server.port}`, { maxRetriesPerRequest: 0 });
    try {
      expect(await fsyncAlways(user)).toBe(false);
      const s = await inspect(user);
      expect(s.durable).toBe(false);
      expect(s.id).toMatch(/^[0-9a-f]{40}$/);
    } finally {
      user.disconnect();
    }
  });

  it("rejects as unavailable when CONFIG cannot be sent (a connection not ready), instead of answering not durable", async () => {
    // never connected, no offline queue: what a client still in its ready check answers CONFIG with
    const idle = new Redis(server.url, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0 });
    try {
      await expect(fsyncAlways(idle)).rejects.toBeInstanceOf(StoreUnavailableError);
    } finally {
      idle.disconnect();
    }
  });
});
