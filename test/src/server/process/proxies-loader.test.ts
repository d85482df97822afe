import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { MemoryStore } from "@proxybroker/sdk/engine";
import { DEFAULT_SCORING } from "@proxybroker/sdk/model";
import { loadSettings } from "../../../../src/config/settings.js";
import { proxiesLoader } from "../../../../src/server/process/store.js";

/** The proxies file, loaded at start and again after a loss of state: new proxies go to the health checker at once. */
describe("proxiesLoader", () => {
  it("tells of the proxies new to the pool, and only those", async () => {
    const dir = await mkdtemp(join(tmpdir(), "pb-loader-"));
    const file = join(dir, "proxies.txt");
    await writeFile(file, "http://s1:pw@10.6.0.1:7000\nhttp://s2:pw@10.6.0.1:7000\n10.6.0.2:3128\n");
    const store = new MemoryStore({ scoring: DEFAULT_SCORING });
    const told: string[][] = [];
    const load = proxiesLoader({
      settings: loadSettings({ PROXIES_FILE: file, PROXIES_POOL: "res", LOG_LEVEL: "silent" }),
      opened: { store, kind: "embedded" },
      onAdded: (pool, ids) => told.push([pool, ...ids]),
    });
    await load("start");
    expect(told).toEqual([["res", "s1@10.6.0.1:7000", "s2@10.6.0.1:7000", "10.6.0.2:3128"]]);
    await load("state lost");
    expect(told).toHaveLength(1);
    await store.removeProxies("res", ["s2@10.6.0.1:7000"]);
    await load("state lost");
    expect(told[1]).toEqual(["res", "s2@10.6.0.1:7000"]);
    await rm(dir, { recursive: true, force: true });
  });
});
