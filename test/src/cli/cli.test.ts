/**
 * The `proxybroker` admin commands against a real broker process with tokens: import with a
 * summary, list with filters, ban, unban, disable, enable, policies, stats, a health-check pass,
 * watch, the audit trail, and exit codes scripts can rely on. The commands run in this process
 * (runCli, what the process runs, with their output captured); the process itself
 * (bin/proxybroker.js) is run where it is what is tested: its exit code, and a pipe closed under it.
 */
import { execFile } from "node:child_process";
import { createServer } from "node:http";
import type { Server } from "node:http";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { brokerProcess, freePort } from "../../support/broker-process.js";
import type { BrokerProcess } from "../../support/broker-process.js";
import { runCliHere, type Ran } from "../../support/cli-here.js";
import { startForwardProxy } from "../../support/forward-proxy.js";
import type { ForwardProxy } from "../../support/forward-proxy.js";

const execFileP = promisify(execFile);
/** One command line, run in this process with its own output and the test's environment. */
const runHere = (args: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<Ran> => runCliHere(args, env);
const ADMIN = "cli-admin-token-0123456789";
const WORKER = "cli-worker-token-0123456789";

describe("proxybroker admin commands", () => {
  let broker: BrokerProcess;
  let dir: string;
  let target: Server;
  let proxy: ForwardProxy;
  // proxies that are not running: loopback ports nothing listens on (no traffic leaves the machine)
  let idle2 = "";
  let idle4 = "";

  const cli = (...args: string[]): Promise<Ran> => runHere([...args, "--address", broker.address, "--token", ADMIN]);
  const json = <T>(r: Ran): T => JSON.parse(r.stdout.trim().split("\n").at(-1) ?? "null") as T;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "pb-cli-"));
    await writeFile(join(dir, "tokens"), `${ADMIN} admin ops\n${WORKER} worker fleet\n`);
    await writeFile(join(dir, "empty.txt"), "");
    target = createServer((_req, res) => res.writeHead(200).end("ok"));
    const port = await freePort();
    await new Promise<void>((r) => target.listen(port, "127.0.0.1", r));
    proxy = await startForwardProxy();
    idle2 = `127.0.0.1:${await freePort()}`;
    idle4 = `127.0.0.1:${await freePort()}`;
    broker = await brokerProcess({
      redisUrl: "",
      env: {
        AUTH_TOKENS_FILE: join(dir, "tokens"),
        PROXIES_FILE: join(dir, "empty.txt"),
        HEALTH_CHECK_URL: `http://127.0.0.1:${port}/health`,
        HEALTH_CHECK_INTERVAL_MS: "3600000",
        HEALTH_CHECK_TIMEOUT_MS: "1000",
      },
    });
    await broker.start();
  }, 60_000);

  afterAll(async () => {
    await broker?.stop();
    await proxy?.close();
    await new Promise<void>((r) => target?.close(() => r()));
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it("import: a summary of added, updated and rejected (with the line and why), exit 3 when something was rejected", {
    timeout: 60_000,
  }, async () => {
    const file = join(dir, "proxies.txt");
    await writeFile(
      file,
      [
        "# the fleet's proxies",
        `${proxy.url.replace("http://", "http://user:secret@")} tier=dc country=de`,
        `${idle2} tier=res`,
        "not a proxy",
        "ftp://127.0.0.1:21",
        `${idle4} country=us`,
        "ftp://user:topsecret@127.0.0.1:21",
        "http://user:topsecret@127.0.0.1:99999 tier=dc",
        "",
      ].join("\n"),
    );
    const r = await cli("import", file);
    expect(r.code).toBe(3);
    expect(r.stdout).toMatch(/pool default: 3 added, 0 updated, 4 rejected/);
    // a rejected line never shows its password; one that does not parse nothing past its first ":"
    expect(r.stdout).toMatch(/line 7: ftp:\/\/user:\*\*\*@127\.0\.0\.1:21: /);
    expect(r.stdout).toMatch(/line 8: http:\/\/user…: .*not host:port or a proxy URL/);
    expect(r.stdout + r.stderr).not.toMatch(/topsecret/);
    expect(r.stdout).toMatch(/line 4: .*key=value/);
    expect(r.stdout).toMatch(/line 5: ftp:\/\/127\.0\.0\.1:21: .*scheme ftp/);
    expect(r.stdout + r.stderr).not.toMatch(/secret/);
    const again = json<{ added: number; updated: number; rejected: unknown[] }>(await cli("import", file, "--json"));
    expect(again).toMatchObject({ added: 0, updated: 3 });
  });

  it("list: a table with passwords as ***, filters by state, tier and label; --json for scripts", { timeout: 60_000 }, async () => {
    const table = await cli("list");
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/user:\*\*\*@127\.0\.0\.1/);
    expect(table.stdout).toMatch(/tier/);
    // the exit IP a health check showed (none here: the check URL answers "ok")
    expect(table.stdout).toMatch(/ exit /);
    expect(table.stdout).not.toMatch(/secret/);
    expect(table.stdout).toMatch(/3 proxies/);
    const dc = json<{ id: string; tier: string; exitIp: string }[]>(await cli("list", "--tier", "dc", "--json"));
    expect(dc.map((p) => [p.tier, p.exitIp])).toEqual([["dc", ""]]);
    const us = json<{ id: string }[]>(await cli("list", "--label", "country=us", "--json"));
    expect(us.map((p) => p.id)).toEqual([idle4]);
    expect((await cli("list", "--state", "sleepy")).code).toBe(2);
  });

  it("ban, unban, disable, enable: what changed, exit 3 for ids not found, exit 2 for a bad duration", { timeout: 60_000 }, async () => {
    expect((await cli("ban", idle2, "--domain", "shop.example.com", "--ttl", "10m")).stdout).toMatch(/ban: 1 changed/);
    expect((await cli("ban", idle2, "--ttl", "soon")).code).toBe(2);
    expect((await cli("ban", idle2)).code).toBe(2);
    const disabled = await cli("disable", idle4, "9.9.9.9:1");
    expect(disabled.code).toBe(3);
    expect(disabled.stdout).toMatch(/not found: 9\.9\.9\.9:1/);
    expect(json<{ state: string }[]>(await cli("list", "--state", "disabled", "--json")).length).toBe(1);
    expect(json<{ changed: string[] }>(await cli("enable", idle4, "--json")).changed).toEqual([idle4]);
    expect(json<{ changed: string[] }>(await cli("unban", idle2, "--domain", "shop.example.com", "--json")).changed).toEqual([idle2]);
  });

  it("policy set, list, delete; stats per pool and domain-key", { timeout: 60_000 }, async () => {
    expect((await cli("policy", "set", "*.example.com", "--min-interval", "2s", "--group", "example", "--jitter", "200ms")).code).toBe(0);
    const policies = json<{ pattern: string; group: string; minIntervalMs: number; jitterMs: number; maxConcurrency: number }[]>(
      await cli("policy", "list", "--json"),
    );
    expect(policies).toEqual([
      expect.objectContaining({ pattern: "*.example.com", group: "example", minIntervalMs: 2_000, jitterMs: 200, maxConcurrency: 1 }),
    ]);
    await cli("ban", idle2, "--domain", "a.example.com", "--ttl", "1m");
    const stats = json<{
      total: number;
      disabled: number;
      domains: { domain: string; bansLastHour: number; effectiveIntervalMs: number }[];
    }>(await cli("stats", "--json"));
    expect(stats.total).toBe(3);
    expect(stats.domains).toEqual(
      expect.arrayContaining([expect.objectContaining({ domain: "example", bansLastHour: 1, effectiveIntervalMs: 2_000 })]),
    );
    expect((await cli("policy", "delete", "*.example.com")).code).toBe(0);
    expect((await cli("policy", "delete", "*.example.com")).code).toBe(3);
  });

  it("policy set with response expectations; list shows them; a malformed marker is a usage error from the broker", {
    timeout: 60_000,
  }, async () => {
    const set = await cli(
      "policy",
      "set",
      "shop.example",
      "--required-marker",
      "#product",
      "--required-marker",
      "Add to cart",
      "--block-marker",
      "Access denied",
      "--min-bytes",
      "2048",
      "--slow-down",
      "please wait",
    );
    expect(set.code).toBe(0);
    const listed = json<{ pattern: string; expectations?: Record<string, unknown> }[]>(await cli("policy", "list", "--json"));
    expect(listed.find((p) => p.pattern === "shop.example")?.expectations).toEqual({
      blockMarkers: ["Access denied"],
      requiredMarkers: ["#product", "Add to cart"],
      minBytes: 2048,
      slowDownPatterns: ["please wait"],
    });
    const table = await cli("policy", "list");
    expect(table.stdout).toContain('needs "#product", needs "Add to cart", >= 2048 B, block "Access denied", slow "please wait"');
    const bad = await cli("policy", "set", "bad.example", "--required-marker", "css:a#x#y");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/required_markers\[0\]/);
    expect((await cli("policy", "delete", "shop.example")).code).toBe(0);
  });

  it("policy set with an isolation group and an affinity; list shows both, table and JSON; a bad one is a usage error", {
    timeout: 60_000,
  }, async () => {
    expect((await cli("policy", "set", "wildberries.ru", "--isolation-group", "Marketplaces", "--affinity", "10m")).code).toBe(0);
    expect((await cli("policy", "set", "ozon.ru", "--isolation-group", "marketplaces")).code).toBe(0);
    type Listed = { pattern: string; isolationGroup: string; affinityWindowMs: number };
    const listed = json<Listed[]>(await cli("policy", "list", "--json"));
    expect(listed).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ pattern: "wildberries.ru", isolationGroup: "marketplaces", affinityWindowMs: 600_000 }),
        expect.objectContaining({ pattern: "ozon.ru", isolationGroup: "marketplaces", affinityWindowMs: 0 }),
      ]),
    );
    const rows = (await cli("policy", "list")).stdout.split("\n");
    expect(rows[0]).toMatch(/\bisolation\b/);
    const cell = (pattern: string) => {
      const header = rows[0] ?? "";
      const row = rows.find((r) => r.startsWith(`${pattern} `)) ?? "";
      return row.slice(header.indexOf("isolation")).split(/\s+/)[0];
    };
    expect(cell("wildberries.ru")).toBe("marketplaces/10m");
    expect(cell("ozon.ru")).toBe("marketplaces");
    const noGroup = await cli("policy", "set", "bad.example", "--affinity", "30s");
    expect(noGroup.code).toBe(2);
    expect(noGroup.stderr).toMatch(/affinity_window needs an isolation_group/);
    const badAffinity = await cli("policy", "set", "bad.example", "--isolation-group", "marketplaces", "--affinity", "soon");
    expect(badAffinity.code).toBe(2);
    expect(badAffinity.stderr).toMatch(/--affinity/);
    for (const pattern of ["wildberries.ru", "ozon.ru"]) expect((await cli("policy", "delete", pattern)).code).toBe(0);
  });

  it("check: one health pass with progress; watch follows events; audit names the token's owner", { timeout: 60_000 }, async () => {
    const check = await cli("check", "--json");
    expect(check.code).toBe(0);
    const totals = json<{ checked: number; passed: number; errors: number }>(check);
    // the forward proxy passes; the two made-up ones do not answer
    expect(totals).toMatchObject({ checked: 3, passed: 1, errors: 2 });
    const watching = cli("watch", "--count", "2", "--json");
    await new Promise((r) => setTimeout(r, 2_500));
    await cli("disable", idle2);
    await cli("enable", idle2);
    const watched = await watching;
    expect(watched.code).toBe(0);
    const events = watched.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { kind: string; proxy: string; detail: string });
    expect(events.map((e) => [e.kind, e.proxy, e.detail])).toEqual([
      ["ADMIN", idle2, "disable"],
      ["ADMIN", idle2, "enable"],
    ]);
    const audit = json<{ actor: string; method: string }[]>(await cli("audit", "--limit", "3", "--json"));
    expect(audit.map((a) => a.method)).toEqual(["EnableProxies", "DisableProxies", "CheckProxies"]);
    expect(new Set(audit.map((a) => a.actor))).toEqual(new Set(["ops"]));
  });

  it("a wrong or a worker token, an unreachable broker: exit 1 and why; the process exits with the code", { timeout: 60_000 }, async () => {
    const worker = await execFileP(process.execPath, ["bin/proxybroker.js", "list", "--address", broker.address, "--token", WORKER]).catch(
      (e: { code: number; stderr: string }) => e,
    );
    expect(worker).toMatchObject({ code: 1, stderr: expect.stringMatching(/PERMISSION_DENIED/) });
    const none = await runHere(["stats", "--address", broker.address]);
    expect(none).toMatchObject({ code: 1, stderr: expect.stringMatching(/UNAUTHENTICATED/) });
    const away = await runHere(["stats", "--address", `127.0.0.1:${await freePort()}`]);
    expect(away).toMatchObject({ code: 1, stderr: expect.stringMatching(/UNAVAILABLE|DEADLINE/) });
    const unknown = await runHere(["frobnicate"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/unknown command 'frobnicate'/);
  });

  it("takes the token from PROXYBROKER_TOKEN without ever printing it; a reader that stops early ends the command quietly", {
    timeout: 60_000,
  }, async () => {
    const env = { ...process.env, PROXYBROKER_TOKEN: ADMIN, PROXYBROKER_ADDRESS: broker.address };
    // a pool whose listing is larger than a pipe's buffer (loopback ports nobody contacts)
    const bulk = join(dir, "bulk.txt");
    await writeFile(bulk, Array.from({ length: 2_000 }, (_, i) => `http://user:pw@127.0.0.1:${30_000 + i} tier=bulk`).join("\n"));
    expect((await runHere(["import", bulk, "--pool", "bulk"], env)).code).toBe(0);
    const listed = await runHere(["list", "--json", "--pool", "bulk"], env);
    expect(JSON.parse(listed.stdout)).toHaveLength(2_000);
    expect(listed.stdout.length).toBeGreaterThan(200_000);
    const help = await runHere(["ban", "--help"], env);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("PROXYBROKER_TOKEN");
    expect(help.stdout + help.stderr).not.toContain(ADMIN);
    // `proxybroker list --json | head -c 1`: the pipe closes under the command
    const piped = await execFileP(
      "bash",
      ["-o", "pipefail", "-c", `${process.execPath} bin/proxybroker.js list --json --pool bulk | head -c 1 >/dev/null`],
      { env },
    );
    expect(piped.stderr).not.toMatch(/EPIPE|Error/);
  });
});
