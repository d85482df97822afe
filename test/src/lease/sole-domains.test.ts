import { describe, expect, it } from "vitest";
import { policySpec, type DomainPolicySpec } from "@proxybroker/sdk/model";
import { DomainShares } from "../../../sdk/src/fallback/domain-shares.js";
import type { DomainListing } from "../../../sdk/src/fallback/domain-shares.js";
import { shareKeyOf } from "@proxybroker/sdk/model";
import { LIST_LAG_MS, soleDomains, VIEW_LAG_MS } from "../../../src/lease/sole-domains.js";

const WINDOW = 600_000;
const NOW = 10_000_000;

describe("soleDomains", () => {
  const silent = { workerId: "s", lastSeenAt: NOW - 20_000, fallbackPoolAt: NOW - 20_000 };
  const use = (workerId: string, domainKey: string, firstUsedAt: number, lastUsedAt: number) => ({
    workerId,
    domainKey,
    firstUsedAt,
    lastUsedAt,
  });

  it("reserves the domain-keys the silent worker used that no other worker certainly shared", () => {
    const uses = [
      use("s", "alone.example", NOW - 500_000, NOW - 25_000),
      use("s", "shared.example", NOW - 500_000, NOW - 25_000),
      use("o", "shared.example", NOW - 400_000, NOW - 1_000),
      use("o", "others-only.example", NOW - 400_000, NOW - 1_000),
    ];
    expect(soleDomains(silent, uses, { windowMs: WINDOW, now: NOW }).sort()).toEqual(["alone.example"]);
  });

  it("counts another worker's use only when it was listed well before the silent worker's last contact, and still listed then", () => {
    const at = silent.lastSeenAt;
    const mine = use("s", "a.example", NOW - 500_000, NOW - 25_000);
    // first recorded less than VIEW_LAG_MS before the silent worker's last contact: maybe not in its lists
    expect(soleDomains(silent, [mine, use("o", "a.example", at - VIEW_LAG_MS + 1, NOW)], { windowMs: WINDOW, now: NOW })).toEqual([
      "a.example",
    ]);
    expect(soleDomains(silent, [mine, use("o", "a.example", at - VIEW_LAG_MS, NOW)], { windowMs: WINDOW, now: NOW })).toEqual([]);
    // listed no more when the silent worker last saw the lists
    expect(soleDomains(silent, [mine, use("o", "a.example", at - 500_000, at - WINDOW)], { windowMs: WINDOW, now: NOW })).toEqual([
      "a.example",
    ]);
  });

  it("drops the domain-keys whose listing of the silent worker ran out (its client stops using them before)", () => {
    expect(soleDomains(silent, [use("s", "old.example", NOW - 900_000, NOW - WINDOW)], { windowMs: WINDOW, now: NOW })).toEqual([]);
    expect(soleDomains(silent, [use("s", "old.example", NOW - 900_000, NOW - WINDOW + 1)], { windowMs: WINDOW, now: NOW })).toEqual([
      "old.example",
    ]);
  });

  it("counts another worker's use from the latest list the silent worker said it holds, when that is later", () => {
    const at = silent.lastSeenAt;
    const mine = use("s", "a.example", NOW - 500_000, NOW - 25_000);
    const listsAt = at - 5_000;
    const said = { ...silent, listsAt };
    // recorded LIST_LAG_MS before that list: in it (though not VIEW_LAG_MS before the last contact)
    expect(soleDomains(said, [mine, use("o", "a.example", listsAt - LIST_LAG_MS, NOW)], { windowMs: WINDOW, now: NOW })).toEqual([]);
    expect(soleDomains(said, [mine, use("o", "a.example", listsAt - LIST_LAG_MS + 1, NOW)], { windowMs: WINDOW, now: NOW })).toEqual([
      "a.example",
    ]);
    // an old list said: the last contact's bound still applies
    const old = { ...silent, listsAt: at - 500_000 };
    expect(soleDomains(old, [mine, use("o", "a.example", at - VIEW_LAG_MS, NOW)], { windowMs: WINDOW, now: NOW })).toEqual([]);
  });

  /**
   * Random histories, as the broker and the workers' clients live them: workers start and stop
   * crawling sites, the broker records their uses (and lists them from a read up to a second old),
   * workers fetch lists every membership period, saying the latest list they hold; some fetches
   * never arrive, some answers are lost. Then one worker is cut off; the others go on. Whenever
   * its client would claim a domain-key alone, the broker must reserve that domain-key whole for
   * it, at every moment it computes the reservations — by share key, when two of the sites are in
   * one isolation group (the reservations key the uses by share key, as the client does).
   */
  it("reserves every domain-key a silent worker may claim alone (random histories)", () => {
    claimsReserved([], 4242);
  });

  it("reserves the isolation group of every grouped domain-key a silent worker may claim alone (random histories)", () => {
    claimsReserved(
      [policySpec({ pattern: "a.example", isolationGroup: "g" }), policySpec({ pattern: "b.example", isolationGroup: "g" })],
      4242,
    );
  });
});

/** The random histories above, under `policies`, from seed `initialSeed`. */
function claimsReserved(policies: readonly DomainPolicySpec[], initialSeed: number): void {
  const PERIOD = 5_000;
  const STEP = 100;
  const CACHE_MS = 1_000;
  const sites = ["a", "b", "c"].map((x) => `${x}.example`);
  let seed = initialSeed;
  const random = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  let claims = 0;
  for (let run = 0; run < 80; run++) {
    const workers = Array.from({ length: 2 + Math.floor(random() * 3) }, (_, i) => `w${i}`);
    const cut = "w0";
    type Record = { first: number; last: number };
    const uses = new Map<string, Map<string, Record>>(workers.map((w) => [w, new Map()]));
    const seen = new Map<string, { lastSeenAt: number; listsAt: number }>(workers.map((w) => [w, { lastSeenAt: 0, listsAt: 0 }]));
    const held = new Map<string, number>(workers.map((w) => [w, 0]));
    const views = new Map(
      workers.map((w) => [w, new DomainShares({ self: w, knownAfterMs: PERIOD + 1_000, expiryMarginMs: 2_000, rememberMs: 60_000 })]),
    );
    for (const view of views.values()) view.usePolicies(policies);
    const phase = new Map(workers.map((w) => [w, STEP * Math.floor((random() * PERIOD) / STEP)]));
    const crawling = new Map(workers.map((w) => [w, new Set<string>()]));
    const cutAt = 20_000 + STEP * Math.floor((random() * 100_000) / STEP);
    const window = 60_000;
    const flat = () =>
      [...uses].flatMap(([workerId, m]) =>
        [...m].map(([domainKey, u]) => ({ workerId, domainKey, firstUsedAt: u.first, lastUsedAt: u.last })),
      );
    // the store as read at each step (the broker lists from a read up to CACHE_MS old)
    const reads: { at: number; uses: ReturnType<typeof flat> }[] = [];
    const listAt = (now: number): Map<string, DomainListing[]> => {
      const read = [...reads].reverse().find((r) => r.at <= now - CACHE_MS * random()) ?? { at: 0, uses: [] };
      const out = new Map<string, DomainListing[]>(workers.map((w) => [w, []]));
      for (const u of read.uses)
        if (u.lastUsedAt + window > now)
          out.get(u.workerId)!.push({ domainKey: u.domainKey, listedForMs: now - u.firstUsedAt, expiresInMs: u.lastUsedAt + window - now });
      return out;
    };
    for (let now = 0; now < cutAt + 60_000; now += STEP) {
      for (const w of workers) {
        const connected = w !== cut || now < cutAt;
        if (random() < 0.003) {
          const site = sites[Math.floor(random() * sites.length)]!;
          const set = crawling.get(w)!;
          if (set.has(site)) set.delete(site);
          else set.add(site);
        }
        if (!connected) continue;
        for (const site of crawling.get(w)!) {
          const u = uses.get(w)!.get(site);
          if (u === undefined || u.last + window <= now) uses.get(w)!.set(site, { first: now, last: now });
          else u.last = now;
          seen.get(w)!.lastSeenAt = now;
          views.get(w)!.contact(now);
        }
        if (now >= phase.get(w)! && (now - phase.get(w)!) % PERIOD === 0) {
          const fate = random();
          if (fate < 0.2) continue; // the fetch never arrived
          const s = seen.get(w)!;
          s.lastSeenAt = now;
          s.listsAt = Math.max(s.listsAt, held.get(w)!);
          if (fate < 0.3) continue; // the answer was lost
          views.get(w)!.update(listAt(now), now);
          held.set(w, now);
        }
      }
      reads.push({ at: now, uses: flat() });
      if (reads.length > 20) reads.shift();
      if (now < cutAt + 1_000) continue;
      // the cut-off worker is silent: its client's claims must all be reserved for it
      const s = seen.get(cut)!;
      const silentSeen = { workerId: cut, lastSeenAt: s.lastSeenAt, fallbackPoolAt: 1, ...(s.listsAt > 0 ? { listsAt: s.listsAt } : {}) };
      const keyed = flat().map((u) => ({ ...u, domainKey: shareKeyOf(policies, u.domainKey) }));
      const reserved = new Set(soleDomains(silentSeen, keyed, { windowMs: window, now }));
      for (const site of sites) {
        if (views.get(cut)!.route(site, now) !== "sole") continue;
        claims++;
        const key = shareKeyOf(policies, site);
        expect(reserved.has(key), `run ${run}: ${cut} claims ${site} (${key}) alone ${now - cutAt} ms after the cut, unreserved`).toBe(
          true,
        );
      }
    }
  }
  expect(claims).toBeGreaterThan(100);
}
