/**
 * A pool's proxies counted by state and by tier and state, from the store's listing (pages of
 * 1,000, at most 50,000 counted: a larger pool is sampled and `counted` says so). The status page
 * and the `proxybroker_proxies` gauge show them.
 */
import type { StoreProxies } from "@proxybroker/sdk/engine";
import type { ProxyStateName } from "@proxybroker/sdk/model";

export const PROXY_STATES: readonly ProxyStateName[] = ["ACTIVE", "QUARANTINED", "BLACKLISTED", "DISABLED"];
const MAX_COUNTED = 50_000;
const PAGE = 1_000;

export interface ProxyCounts {
  readonly byState: Readonly<Record<ProxyStateName, number>>;
  /** tier ("" = none) → state → count. */
  readonly byTier: Readonly<Record<string, Readonly<Record<string, number>>>>;
  readonly counted: number;
}

export async function countProxies(store: StoreProxies, pool: string): Promise<ProxyCounts> {
  const byState: Record<string, number> = Object.fromEntries(PROXY_STATES.map((s) => [s, 0]));
  const byTier: Record<string, Record<string, number>> = {};
  let counted = 0;
  for (let after = ""; counted < MAX_COUNTED; ) {
    const page = await store.listProxies(pool, { size: PAGE, after });
    for (const p of page.proxies) {
      byState[p.state] = (byState[p.state] ?? 0) + 1;
      const t = byTier[p.tier] ?? {};
      byTier[p.tier] = t;
      t[p.state] = (t[p.state] ?? 0) + 1;
      counted++;
    }
    if (page.next === "") break;
    after = page.next;
  }
  return { byState: byState as Record<ProxyStateName, number>, byTier, counted };
}
