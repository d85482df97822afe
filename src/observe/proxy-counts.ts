/**
 * A pool's proxies counted by state, by tier and state, and by exit IP (G9), from the store's
 * listing (pages of 1,000, at most 50,000 counted: a larger pool is sampled and `counted` says so).
 * The status page and the `proxybroker_proxies` and `proxybroker_exit_ips` gauges show them.
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
  readonly exits: ExitCounts;
  readonly counted: number;
}

/** What the health checks showed of the proxies' exit IPs (G9). */
export interface ExitCounts {
  /** Proxies whose exit IP no check has shown yet. */
  readonly unknown: number;
  /** Distinct exit IPs known. */
  readonly distinct: number;
  /** Exit IPs shown by more than one proxy → how many (the most shared first, at most 50). */
  readonly shared: readonly { readonly exitIp: string; readonly proxies: number }[];
}

const MAX_SHARED_LISTED = 50;

export async function countProxies(store: StoreProxies, pool: string): Promise<ProxyCounts> {
  const byState: Record<string, number> = Object.fromEntries(PROXY_STATES.map((s) => [s, 0]));
  const byTier: Record<string, Record<string, number>> = {};
  const perExit = new Map<string, number>();
  let unknown = 0;
  let counted = 0;
  for (let after = ""; counted < MAX_COUNTED; ) {
    const page = await store.listProxies(pool, { size: PAGE, after });
    for (const p of page.proxies) {
      byState[p.state] = (byState[p.state] ?? 0) + 1;
      const t = byTier[p.tier] ?? {};
      byTier[p.tier] = t;
      t[p.state] = (t[p.state] ?? 0) + 1;
      if (p.exitIp === "") unknown++;
      else perExit.set(p.exitIp, (perExit.get(p.exitIp) ?? 0) + 1);
      counted++;
    }
    if (page.next === "") break;
    after = page.next;
  }
  const shared = [...perExit]
    .filter(([, n]) => n > 1)
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, MAX_SHARED_LISTED)
    .map(([exitIp, proxies]) => ({ exitIp, proxies }));
  return { byState: byState as Record<ProxyStateName, number>, byTier, exits: { unknown, distinct: perExit.size, shared }, counted };
}
