/**
 * A worker's own listings of domain-keys, as the broker shows them to that worker (docs/spec.md §7).
 *
 * A worker that is cut off while it is alone on a domain-key uses every proxy of it from its
 * fallback pool ("sole"). Another worker that starts on that key after the cut-off worker's latest
 * list, before the broker counts it silent and reserves the key whole for it, is granted its
 * acquires and listed; if its own lists then made it *established* for the key, the two would
 * both use the key in fallback, one on every proxy. So a worker's lists name it with a
 * domain-key only once every other worker still listed with a domain-key of the same share key
 * surely saw that use: its first time is at or before the bound (src/lease/list-lags.ts) that
 * applies to that other worker — `VIEW_LAG_MS` before its last contact,
 * or `LIST_LAG_MS` before the latest list it said it holds, whichever is later. The others'
 * lists name the newcomer at once, as before.
 *
 * Why that suffices: a worker X that claims the key alone in fallback is still listed with it
 * (it stops using a listing before the broker drops it), so it was listed at every list that
 * named the newcomer N with the key. At the first of them, N's use was surely in X's latest list,
 * and X's later lists show it while N may use the key: X does not claim the key alone. An X cut
 * off before it saw N's use keeps N's own lists from naming the key for as long as X is listed
 * with it — N never becomes established beside it — and X's reservation (its claim names the key
 * whole) keeps the key from N in the broker meanwhile. The cost: N can use the key in fallback about a membership period or two
 * later, and not at all while such an X is listed.
 *
 * Per share key (shareKeyOf, sdk/src/model/isolation.ts), not per domain-key: a worker alone on
 * `#G` with one key of isolation group G uses every proxy for it, and a newcomer on another key
 * of G must not become established beside it either. Under each policy set the other worker's
 * fallback pool may hold (`POLICY_LAG_MS`).
 */
import { shareKeyOf } from "@proxybroker/sdk/model";
import type { DomainUse, PolicySet, WorkerSeen } from "@proxybroker/sdk/model";
import { LIST_LAG_MS, POLICY_LAG_MS, VIEW_LAG_MS } from "./list-lags.js";

/** A use first recorded at or before this time is surely in the latest list `w` holds. */
function surelySeenBy(w: WorkerSeen): number {
  return Math.max(w.lastSeenAt - VIEW_LAG_MS, (w.listsAt ?? 0) - LIST_LAG_MS);
}

/**
 * The domain-keys of `self`'s uses its own lists must not name yet at `at.now`: another worker
 * still listed with a domain-key of the same share key may not have seen the use. `seen`: the
 * workers that may still be in fallback (seen within the fallback window; one not among them
 * serves nothing from it).
 */
export function ownListingsHeld(
  self: string,
  uses: readonly DomainUse[],
  seen: readonly WorkerSeen[],
  policies: Pick<PolicySet, "policies" | "history">,
  at: { readonly now: number; readonly windowMs: number },
): Set<string> {
  const byWorker = new Map<string, DomainUse[]>();
  for (const u of uses) {
    if (u.lastUsedAt + at.windowMs <= at.now) continue;
    const list = byWorker.get(u.workerId) ?? [];
    list.push(u);
    byWorker.set(u.workerId, list);
  }
  const mine = byWorker.get(self) ?? [];
  const held = new Set<string>();
  if (mine.length === 0) return held;
  const sets = [
    { until: Number.POSITIVE_INFINITY, policies: policies.policies },
    ...policies.history.map((h) => ({ until: h.retiredAt, policies: h.policies })),
  ];
  for (const w of seen) {
    if (w.workerId === self) continue;
    const theirs = byWorker.get(w.workerId) ?? [];
    const unseen = mine.filter((u) => u.firstUsedAt > surelySeenBy(w) && !held.has(u.domainKey));
    if (theirs.length === 0 || unseen.length === 0) continue;
    for (const { policies: p } of sets.filter((s) => s.until >= w.lastSeenAt - POLICY_LAG_MS)) {
      const keys = new Set(theirs.map((u) => shareKeyOf(p, u.domainKey)));
      for (const u of unseen) if (keys.has(shareKeyOf(p, u.domainKey))) held.add(u.domainKey);
    }
  }
  return held;
}
