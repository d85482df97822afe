/** The former name of `withRedis()` (with-redis.ts), kept for the files that still import it. */
import { withRedis, type FileRedis } from "./with-redis.js";

export type { FileRedis };

/** `withRedis()` without options. */
export function redisForFile(): FileRedis {
  return withRedis();
}
