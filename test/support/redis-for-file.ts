/**
 * One throwaway redis-server for a test file: started before its tests, stopped after them, with
 * an admin connection for looking at keys and deleting them.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll } from "vitest";
import { startRedisServer, type RedisServer } from "./redis-server.js";

export interface FileRedis {
  /** The server's `redis://` URL (once the file's tests run). */
  url(): string;
  /** The admin connection (once the file's tests run). */
  admin(): Redis;
  /** Delete every key matching the glob `pattern`. */
  deleteKeys(pattern: string): Promise<void>;
}

/** Register the server's start and stop with the file's hooks. */
export function redisForFile(): FileRedis {
  let server: RedisServer | undefined;
  let admin: Redis | undefined;
  beforeAll(async () => {
    server = await startRedisServer();
    admin = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await admin.connect();
  });
  afterAll(async () => {
    admin?.disconnect();
    await server?.stop();
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error("the file's redis-server is not started yet");
    return value;
  };
  return {
    url: () => started(server).url,
    admin: () => started(admin),
    async deleteKeys(pattern) {
      const a = started(admin);
      let cursor = "0";
      do {
        const [next, keys] = await a.scan(cursor, "MATCH", pattern, "COUNT", 500);
        cursor = next;
        if (keys.length > 0) await a.del(...keys);
      } while (cursor !== "0");
    },
  };
}
