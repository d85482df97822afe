import type { Redis } from "ioredis";
import type { ProxyAdmin } from "@proxybroker/sdk/gen/proxybroker/v1/admin_pb";
import type { ClientOf } from "@proxybroker/sdk/wire";
import { SEED000_POOL_KEY } from "../test/support/seed000.js";

const BATCH = 10_000;
const SEED_INITIAL_SCORE = 50;

/** `count` distinct proxy ids (`ip:port`): 10.0.0.1:3128, 10.0.0.2:3128, … */
export function proxyIds(count: number): string[] {
  return Array.from({ length: count }, (_, n) => {
    const i = n + 1;
    return `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}:3128`;
  });
}

/** Load the proxies into a pool of the broker (the default pool) through ProxyAdmin.AddProxies. */
export async function addToBroker(admin: ClientOf<typeof ProxyAdmin>, ids: readonly string[], pool = "default"): Promise<void> {
  for (let i = 0; i < ids.length; i += BATCH) {
    const proxies = ids.slice(i, i + BATCH).map((id) => ({ url: `http://${id}`, tier: "", labels: {} }));
    const r = await admin.addProxies({ pool, proxies });
    if (r.rejected.length > 0) throw new Error(`broker rejected ${r.rejected.length} proxies, e.g. ${r.rejected[0]?.reason ?? ""}`);
  }
}

/** Load the proxies into seed 000's sorted set, each with score 50. */
export async function addToSeedPool(redis: Redis, ids: readonly string[]): Promise<void> {
  for (let i = 0; i < ids.length; i += BATCH) {
    const args: Array<string | number> = [];
    for (const id of ids.slice(i, i + BATCH)) args.push(SEED_INITIAL_SCORE, id);
    await redis.zadd(SEED000_POOL_KEY, ...args);
  }
}
