/**
 * The domain-keys a silent worker may be leasing with every proxy from its fallback pool — it was
 * the only worker its lists named with them (sdk/src/fallback/domain-shares.ts) — which the
 * broker reserves for it whole (docs/spec.md §7). Reserving too much costs the others those
 * domain-keys for a while; reserving too little could put two workers on one pair. So another
 * worker's use counts only when it was certainly in the silent worker's latest list: listed
 * without a break from a time that list surely shows until the silent worker's last contact.
 * That time is the later of
 * - `VIEW_LAG_MS` before its last contact: a worker claims a domain-key alone only with lists at
 *   most 30 s older than its last contact with the broker;
 * - `LIST_LAG_MS` before the latest list it said it holds (`WorkerSeen.listsAt`): its latest list
 *   is that one or a later one, and a list shows every use recorded `LIST_LAG_MS` before it.
 * Its latest list was fetched at or before its last contact, so a use listed over that span is in
 * it.
 *
 * Isolation groups (G8): a worker is alone per share key (shareKeyOf, sdk/src/model/isolation.ts), so the
 * reservations pass uses keyed by share key — `#<group>` for every domain-key of an isolation
 * group — and get share keys back: another worker's use of any key of the group counts against
 * the group. The rule itself does not look at the keys.
 */
import type { DomainUse, WorkerSeen } from "@proxybroker/sdk/model";

/** How much older than a worker's last contact its lists may be when it claims a domain-key alone (+ 5 s). */
export const VIEW_LAG_MS = 35_000;
/**
 * How much older than a list a use may be and still be missing from it: the broker lists the uses
 * it read at most a second before (src/lease/domain-use-cache.ts), and replicas' clocks differ.
 */
export const LIST_LAG_MS = 2_000;

/**
 * The domain-keys (or share keys, as `uses` carry them) of `silent` to reserve whole at `now`:
 * those it may still use (its listing has not run out: `windowMs` after its last use) that no
 * other worker certainly shared with it.
 */
export function soleDomains(
  silent: WorkerSeen,
  uses: readonly DomainUse[],
  opts: { readonly windowMs: number; readonly now: number },
): string[] {
  const contact = silent.lastSeenAt;
  const surelyListed = Math.max(contact - VIEW_LAG_MS, (silent.listsAt ?? 0) - LIST_LAG_MS);
  const mine = new Set<string>();
  for (const u of uses) if (u.workerId === silent.workerId && u.lastUsedAt + opts.windowMs > opts.now) mine.add(u.domainKey);
  for (const u of uses) {
    if (u.workerId === silent.workerId || !mine.has(u.domainKey)) continue;
    // listed from a time its latest list surely shows until its last contact
    if (u.firstUsedAt <= surelyListed && u.lastUsedAt + opts.windowMs > contact) mine.delete(u.domainKey);
  }
  return [...mine];
}
