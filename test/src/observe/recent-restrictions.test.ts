import { describe, expect, it } from "vitest";
import { MemoryStore } from "@proxybroker/sdk/engine";
import { DEFAULT_SCORING } from "@proxybroker/sdk/model";
import { RecentRestrictions } from "../../../src/observe/recent-restrictions.js";
import { fakeClock } from "../../support/fake-clock.js";

describe("RecentRestrictions", () => {
  it("counts the last hour's bans and cool-downs per domain-key, each event once, however often it is asked", async () => {
    const clock = fakeClock();
    const store = new MemoryStore({ scoring: DEFAULT_SCORING, clock: () => clock.now() });
    const recent = new RecentRestrictions();
    const ban = (domainKey: string) =>
      store.appendEvent("default", { kind: "BAN", proxyId: "p:1", domainKey, detail: String(clock.now() + 1_000) });
    await ban("shop");
    await store.appendEvent("default", { kind: "COOL_DOWN", proxyId: "p:1", domainKey: "news", detail: String(clock.now() + 1_000) });
    await store.appendEvent("default", { kind: "ADMIN", proxyId: "p:2", domainKey: "shop", detail: "ban on shop for 60 s" });
    await store.appendEvent("default", { kind: "POLICY", proxyId: "", domainKey: "shop", detail: "set shop" });

    const first = await recent.of(store, "default", clock.now());
    expect(Object.fromEntries(first.bans)).toEqual({ shop: 2 });
    expect(Object.fromEntries(first.coolDowns)).toEqual({ news: 1 });
    // asked again (concurrently, too): nothing counted twice
    const again = await Promise.all([recent.of(store, "default", clock.now()), recent.of(store, "default", clock.now())]);
    for (const r of again) expect(Object.fromEntries(r.bans)).toEqual({ shop: 2 });

    clock.advance(40 * 60_000);
    await ban("news");
    expect(Object.fromEntries((await recent.of(store, "default", clock.now())).bans)).toEqual({ shop: 2, news: 1 });
    // an hour after the first ones, only the later ban is left
    clock.advance(25 * 60_000);
    const later = await recent.of(store, "default", clock.now());
    expect(Object.fromEntries(later.bans)).toEqual({ news: 1 });
    expect(later.coolDowns.size).toBe(0);
    expect((await recent.of(store, "other-pool", clock.now())).bans.size).toBe(0);
  });
});
