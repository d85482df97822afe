/**
 * Internal to the in-memory engine: an admin's action on proxies (store-semantics §admin,
 * `proxyAction`), the mirror of src/store/redis/lua/proxyAction-3.lua.
 */
import type { ProxyAction, ProxyActionResult } from "../../model/model.js";
import { pairOf, refreshBusy } from "./pair.js";
import type { PoolState } from "./pool-state.js";
import type { ProxyRecord } from "./records.js";

/** Apply `action` to each id; reports what changed. */
export function proxyAction(pool: PoolState, ids: readonly string[], action: ProxyAction, now: number): ProxyActionResult {
  const result: ProxyActionResult = { changed: [], unchanged: [], notFound: [] };
  for (const id of ids) {
    const rec = pool.proxies.get(id);
    if (rec === undefined) result.notFound.push(id);
    else (apply(pool, rec, action, now) ? result.changed : result.unchanged).push(id);
  }
  return result;
}

function apply(pool: PoolState, rec: ProxyRecord, action: ProxyAction, now: number): boolean {
  switch (action.kind) {
    case "disable":
      if (rec.state === "DISABLED") return false;
      pool.deactivate(rec, "DISABLED", 0);
      return true;
    case "enable":
      if (rec.state !== "DISABLED") return false;
      pool.activate(rec, rec.score);
      return true;
    case "ban":
      if (action.domainKey !== "") return banPair(pool, rec.id, action.domainKey, now + action.ttlMs, now);
      if (rec.state !== "ACTIVE" && rec.state !== "QUARANTINED") return false;
      // never shortens a quarantine that runs longer; the count is not raised
      pool.deactivate(rec, "QUARANTINED", Math.max(now + action.ttlMs, rec.state === "QUARANTINED" ? rec.quarantineUntil : 0));
      return true;
    case "unban":
      if (action.domainKey !== "") return banPair(pool, rec.id, action.domainKey, 0, now);
      if (rec.state !== "QUARANTINED") return false;
      pool.activate(rec, rec.score);
      return true;
  }
}

/** Ban the pair until `untilMs`, or lift its ban (0); false when there was none to lift. */
function banPair(pool: PoolState, proxyId: string, domainKey: string, untilMs: number, now: number): boolean {
  const domain = pool.domain(domainKey);
  const pair = pairOf(domain, proxyId);
  if (untilMs === 0 && pair.banUntil <= now) return false;
  pair.banUntil = untilMs;
  refreshBusy(domain, proxyId, pair, now);
  return true;
}
