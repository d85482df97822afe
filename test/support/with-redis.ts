/**
 * One throwaway redis-server for a test file (or a describe block): started in the beforeAll of
 * the scope `withRedis()` is called in, stopped in its afterAll, with an admin connection (opened
 * at its first use) for looking at keys and deleting them.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll } from "vitest";
import { startRedisServer, type RedisServer, type RedisServerOptions } from "./redis-server.js";

export interface FileRedis {
  /** The server's `redis://` URL (once the scope's tests run). */
  url(): string;
  /** The running server, to stop, kill or restart it (once the scope's tests run). */
  server(): RedisServer;
  /** The admin connection (once the scope's tests run). */
  admin(): Redis;
  /** Delete every key matching the glob `pattern`. */
  deleteKeys(pattern: string): Promise<void>;
}

/** Register a redis-server's start and stop with the hooks of the current scope. */
export function withRedis(options: RedisServerOptions = {}): FileRedis {
  let server: RedisServer | undefined;
  let admin: Redis | undefined;
  beforeAll(async () => {
    server = await startRedisServer(options);
  });
  afterAll(async () => {
    admin?.disconnect();
    await server?.stop();
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error("the scope's redis-server is not started yet");
    return value;
  };
  const connection = (): Redis => {
    admin ??= new Redis(started(server).url, { maxRetriesPerRequest: 1 });
    return admin;
  };
  return {
    url: () => started(server).url,
    server: () => started(server),
    admin: connection,
    async deleteKeys(pattern) {
      const a = connection();
      let cursor = "0";
      do {
        const [next, keys] = await a.scan(cursor, "MATCH", pattern, "COUNT", 500);
        cursor = next;
        if (keys.length > 0) await a.del(...keys);
      } while (cursor !== "0");
    },
  };
}
