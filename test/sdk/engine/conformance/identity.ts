/**
 * Internal to the conformance suite: proxy identity (docs/spec.md §11) — usernames on one
 * endpoint are proxies of their own, and a proxy stored under its endpoint before ids carried
 * usernames keeps that id when its URL is added again.
 */
import { describe, expect, it } from "vitest";
import { parseProxySpec } from "@proxybroker/sdk/model";
import type { ProxySpecInput } from "@proxybroker/sdk/model";
import { acq, allProxies, deny, grant, openStore, proxyView, type StoreFactory } from "./harness.js";

const spec = (url: string, tier = "datacenter"): ProxySpecInput => parseProxySpec({ url, tier, labels: {} });
/** How a proxy with a username was stored before ids carried usernames: under its endpoint. */
const legacy = (url: string): ProxySpecInput => {
  const p = spec(url);
  return { ...p, id: p.id.slice(p.id.indexOf("@") + 1) };
};

export function identitySuite(factory: StoreFactory): void {
  describe("proxy identity", () => {
    it("two usernames on one endpoint are two proxies, each exclusive on its own", async () => {
      const h = await openStore(factory);
      const r = await h.store.addProxies("default", [spec("http://s-1:pw@gw.example:7777"), spec("http://s-2:pw@gw.example:7777")]);
      expect(r).toEqual({ added: ["s-1@gw.example:7777", "s-2@gw.example:7777"], updated: [] });
      const leased = [await grant(h), await grant(h)].map((l) => l.proxy.id).sort();
      expect(leased).toEqual(["s-1@gw.example:7777", "s-2@gw.example:7777"]);
      await deny(h, acq());
    });

    it("a legacy proxy (stored as host:port) added again by its URL stays one proxy, its id kept", async () => {
      const h = await openStore(factory);
      await h.store.addProxies("default", [legacy("http://user:old@gw.example:7777"), legacy("http://us%65r2:pw@gw.example:7778")]);
      const again = await h.store.addProxies("default", [
        spec("http://user:new@gw.example:7777", "residential"),
        spec("http://user2:pw@gw.example:7778"),
      ]);
      expect(again).toEqual({ added: [], updated: ["gw.example:7777", "gw.example:7778"] });
      expect((await allProxies(h)).map((p) => p.id).sort()).toEqual(["gw.example:7777", "gw.example:7778"]);
      expect(await proxyView(h, "gw.example:7777")).toMatchObject({ url: "http://user:new@gw.example:7777", tier: "residential" });
      // one identity, one lock
      const l = await grant(h, acq({ tier: "residential" }));
      expect(l.proxy.id).toBe("gw.example:7777");
      await deny(h, acq({ tier: "residential" }));
    });

    it("another username, or none stored, is another proxy beside the legacy one", async () => {
      const h = await openStore(factory);
      await h.store.addProxies("default", [legacy("http://user:pw@gw.example:7777"), spec("http://gw.example:7778")]);
      const r = await h.store.addProxies("default", [spec("http://other:pw@gw.example:7777"), spec("http://user:pw@gw.example:7778")]);
      expect(r).toEqual({ added: ["other@gw.example:7777", "user@gw.example:7778"], updated: [] });
      // once the new id exists it is the one updated
      expect(await h.store.addProxies("default", [spec("http://other:x@gw.example:7777")])).toEqual({
        added: [],
        updated: ["other@gw.example:7777"],
      });
      expect((await allProxies(h)).length).toBe(4);
    });
  });
}
