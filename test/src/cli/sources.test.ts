/**
 * `proxybroker source add | list | remove` against a real broker process (embedded store, a health
 * checker, so this process leads it): the source is fetched at once with the headers of its file,
 * its proxies show up, the status page and the metrics report the refresh, and the header's value
 * is printed nowhere.
 */
import { createServer } from "node:http";
import type { Server } from "node:http";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { DEFAULT_SCORING } from "@proxybroker/sdk/model";
import { runCliHere as runHere, type Ran } from "../../support/cli-here.js";
import { brokerProcess, freePort } from "../../support/broker-process.js";
import type { BrokerProcess } from "../../support/broker-process.js";
import { startListServer } from "../../support/list-server.js";
import type { ListServer } from "../../support/list-server.js";

const SECRET = "sk-live-7c1d2e3f4a5b";

describe("proxybroker source", () => {
  let broker: BrokerProcess;
  let dir: string;
  let target: Server;
  let list: ListServer;
  let metricsAddress = "";
  const ids: string[] = [];

  const cli = (...args: string[]): Promise<Ran> => runHere([...args, "--address", broker.address]);
  const json = <T>(r: Ran): T => JSON.parse(r.stdout.trim().split("\n").at(-1) ?? "null") as T;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "pb-src-cli-"));
    await writeFile(join(dir, "empty.txt"), "");
    await writeFile(join(dir, "headers"), `# the provider's key\nX-Api-Key: ${SECRET}\n`);
    target = createServer((_req, res) => res.writeHead(200).end("ok"));
    const port = await freePort();
    await new Promise<void>((r) => target.listen(port, "127.0.0.1", r));
    list = await startListServer();
    // proxies on loopback ports nothing listens on: their probes fail, no traffic leaves the machine
    for (let i = 0; i < 3; i++) ids.push(`127.0.0.1:${await freePort()}`);
    list.answer(200, `${ids.join("\n")}\n`);
    metricsAddress = `127.0.0.1:${await freePort()}`;
    broker = await brokerProcess({
      redisUrl: "",
      env: {
        PROXIES_FILE: join(dir, "empty.txt"),
        HEALTH_CHECK_URL: `http://127.0.0.1:${port}/health`,
        HEALTH_CHECK_INTERVAL_MS: "3600000",
        HEALTH_CHECK_TIMEOUT_MS: "1000",
        HEALTH_LEADER_TTL_MS: "1000",
        METRICS_ADDRESS: metricsAddress,
        // headers files are read from this directory only
        SOURCE_HEADERS_DIR: dir,
      },
    });
    await broker.start();
  }, 60_000);

  afterAll(async () => {
    await broker?.stop();
    await list?.close();
    await new Promise<void>((r) => target?.close(() => r()));
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it("add fetches at once with the file's headers; list, the status page and metrics report it; remove", { timeout: 60_000 }, async () => {
    const added = await cli("source", "add", list.url, "--headers-file", join(dir, "headers"), "--interval", "10s", "--label", "via=list");
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toMatch(/added source [0-9a-f]{12} of pool default/);
    await vi.waitFor(
      async () => {
        const proxies = json<{ id: string; labels: Record<string, string> }[]>(await cli("list", "--json"));
        expect(proxies.map((p) => p.id).sort()).toEqual([...ids].sort());
        expect(proxies[0]?.labels).toEqual({ via: "list" });
      },
      { timeout: 15_000, interval: 200 },
    );
    // probed at once (nothing listens there: an error, score × 0.7), not at the next round an hour on
    await vi.waitFor(
      async () => {
        const proxies = json<{ score: number }[]>(await cli("list", "--json"));
        expect(proxies.every((p) => p.score < DEFAULT_SCORING.initialScore)).toBe(true);
      },
      { timeout: 15_000, interval: 200 },
    );
    expect(list.requests.at(-1)?.["x-api-key"]).toBe(SECRET);
    const listed = await cli("source", "list", "--json");
    expect(json<unknown[]>(listed)).toEqual([
      expect.objectContaining({ url: list.url, headersFile: join(dir, "headers"), lastResult: "ok", listed: 3, owned: 3, added: 3 }),
    ]);
    const table = await cli("source", "list");
    expect(table.stdout).toContain(list.url);
    const status = await (await fetch(`http://${metricsAddress}/status.json`)).text();
    expect(status).toContain('"sources":[{');
    expect(status).toContain('"result":"ok"');
    const metrics = await (await fetch(`http://${metricsAddress}/metrics`)).text();
    expect(metrics).toMatch(/proxybroker_source_refreshes_total\{pool="default",source="[0-9a-f]{12}",result="ok"\} 1/);
    const audit = await cli("audit", "--json");
    expect(audit.stdout).toContain("RefreshSource");
    for (const out of [added, listed, table, audit]) expect(out.stdout + out.stderr).not.toContain(SECRET);
    expect(status + metrics + broker.output()).not.toContain(SECRET);

    // refresh now: a list shrunk to one (past the bound) changes nothing, and says why; exit 1
    list.answer(200, `${ids[0]}\n`);
    const refused = await cli("source", "refresh", list.url);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toMatch(/shrink: lists 1 proxies, 3 before: shrank by more than 50 %; nothing changed/);
    const counted = await (await fetch(`http://${metricsAddress}/metrics`)).text();
    expect(counted).toMatch(/proxybroker_source_refreshes_total\{pool="default",source="[0-9a-f]{12}",result="shrink"\} 1/);
    expect(json<{ detail: string }[]>(await cli("audit", "--json")).map((a) => a.detail)).toContainEqual(
      expect.stringMatching(/shrink: lists 1 proxies, 3 before.*nothing changed/),
    );
    list.answer(200, `${ids.slice(0, 2).join("\n")}\n`);
    const fine = await cli("source", "refresh", list.url, "--json");
    expect(fine.code).toBe(0);
    expect(json<{ lastResult: string; removed: number; owned: number }>(fine)).toMatchObject({ lastResult: "ok", removed: 1, owned: 2 });
    expect(json<unknown[]>(await cli("list", "--json"))).toHaveLength(2);

    const removed = await cli("source", "remove", list.url);
    expect(removed.code).toBe(0);
    expect((await cli("source", "list")).stdout).toContain("has no sources");
    expect((await cli("source", "remove", list.url)).code).toBe(3);
    // its proxies stay
    expect(json<unknown[]>(await cli("list", "--json"))).toHaveLength(2);
    expect((await cli("source", "refresh", list.url)).stderr).toContain("NOT_FOUND");
  });

  it("a bad URL, format or path is a usage error from the broker", { timeout: 30_000 }, async () => {
    const bad = await cli("source", "add", "ftp://example.com/list");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("INVALID_ARGUMENT");
    expect((await cli("source", "add", list.url, "--path", "a..b")).code).toBe(2);
    expect((await cli("source", "add", list.url, "--interval", "1s")).stderr).toContain("interval");
    expect((await cli("source", "add", list.url, "--headers-file", join(dir, "missing"))).stderr).toContain("headers_file");
    // a file outside SOURCE_HEADERS_DIR is refused: an admin token cannot send any file's lines away
    const outside = await cli("source", "add", list.url, "--headers-file", "/etc/hostname");
    expect(outside.code).not.toBe(0);
    expect(outside.stderr).toMatch(/headers_file: .*not inside SOURCE_HEADERS_DIR/);
  });
});
