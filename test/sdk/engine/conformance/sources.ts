/**
 * Internal to the conformance suite: a pool's sources (`StoreSources`): put, list with status,
 * members, remove; replacing a source keeps its status and members.
 */
import { describe, expect, it } from "vitest";
import type { SourceSpec } from "@proxybroker/sdk/model";
import { NO_SOURCE_STATUS } from "@proxybroker/sdk/model";
import { openStore, type StoreFactory } from "./harness.js";

const spec = (id: string, extra: Partial<SourceSpec> = {}): SourceSpec => ({
  id,
  pool: "default",
  url: `https://lists.example/${id}`,
  format: "json",
  jsonPath: "data[].url",
  headersFile: "/etc/proxybroker/h",
  intervalMs: 60_000,
  tier: "dc",
  labels: { country: "us" },
  createdAt: 1_000,
  ...extra,
});

export function sourceSuite(factory: StoreFactory): void {
  describe("sources", () => {
    it("put, list in id order with their status, members; a replaced source keeps both; remove drops all", async () => {
      const h = await openStore(factory);
      const s = h.store;
      expect(await s.listSources("default")).toEqual([]);
      await s.putSource(spec("b"));
      await s.putSource(spec("a", { format: "lines", jsonPath: "" }));
      expect((await s.listSources("default")).map((v) => [v.id, v.format, v.status])).toEqual([
        ["a", "lines", NO_SOURCE_STATUS],
        ["b", "json", NO_SOURCE_STATUS],
      ]);
      const status = { lastRefreshAt: 5, lastSuccessAt: 5, result: "ok" as const, error: "", listed: 2, added: 2, removed: 0 };
      await s.putSourceStatus("default", "b", status);
      await s.setSourceMembers("default", "b", ["1.1.1.1:1", "2.2.2.2:2"]);
      await s.putSource(spec("b", { intervalMs: 120_000 }));
      const [, b] = await s.listSources("default");
      expect(b).toEqual({ ...spec("b", { intervalMs: 120_000 }), status });
      expect((await s.sourceMembers("default", "b")).sort()).toEqual(["1.1.1.1:1", "2.2.2.2:2"]);
      expect(await s.sourceMemberCount("default", "b")).toBe(2);
      await s.setSourceMembers("default", "b", ["3.3.3.3:3"]);
      expect(await s.sourceMembers("default", "b")).toEqual(["3.3.3.3:3"]);
      expect(await s.sourceMemberCount("default", "b")).toBe(1);
      expect(await s.listSources("other")).toEqual([]);
      expect(await s.removeSource("default", "b")).toBe(true);
      expect(await s.removeSource("default", "b")).toBe(false);
      expect(await s.sourceMembers("default", "b")).toEqual([]);
      expect(await s.sourceMemberCount("default", "b")).toBe(0);
      // the status and members of a source that is gone are not recorded
      await s.putSourceStatus("default", "b", status);
      await s.setSourceMembers("default", "b", ["4.4.4.4:4"]);
      await s.putSource(spec("b"));
      expect((await s.listSources("default"))[1]?.status).toEqual(NO_SOURCE_STATUS);
      expect(await s.sourceMembers("default", "b")).toEqual([]);
    });
  });
}
