/**
 * `proxybroker import`, in this process against a real broker: rejected lines by their own line
 * number, and `--template` (docs/spec.md §11).
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lastJson, runCliHere, type Ran } from "../../support/cli-here.js";
import { withBroker } from "../../support/with-broker.js";

describe("proxybroker import", () => {
  const b = withBroker({ kind: "embedded" });
  let dir = "";

  const cli = (...args: string[]): Promise<Ran> => runCliHere([...args, "--address", b.address]);
  const json = lastJson;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "pb-import-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("reports each rejected line with its own line number, without its password", async () => {
    const file = join(dir, "dupes.txt");
    const lines = [
      "http://alice:pw1@10.4.0.1:3128",
      "# a comment",
      "http://alice:topsecret@10.4.0.1:3128",
      "http://bob:pw@10.4.0.1:3128",
      "10.4.0.2:3128",
      "http://alice:othersecret@10.4.0.1:3128 tier=x",
      "10.4.0.2:3128",
    ];
    await writeFile(file, `${lines.join("\n")}\n`);
    const r = await cli("import", file, "--pool", "dupes");
    expect(r.code).toBe(3);
    expect(r.stdout).toMatch(/pool dupes: 3 added, 0 updated, 3 rejected/);
    expect(r.stdout).toMatch(/line 3: http:\/\/alice:\*\*\*@10\.4\.0\.1:3128: proxy alice@10\.4\.0\.1:3128 appears twice/);
    expect(r.stdout).toMatch(/line 6: http:\/\/alice:\*\*\*@10\.4\.0\.1:3128: .*appears twice/);
    expect(r.stdout).toMatch(/line 7: http:\/\/10\.4\.0\.2:3128: .*appears twice/);
    expect(r.stdout + r.stderr).not.toMatch(/secret/);
    const ids = (await b.admin.listProxies({ pool: "dupes" })).proxies.map((p) => p.id).sort();
    expect(ids).toEqual(["10.4.0.2:3128", "alice@10.4.0.1:3128", "bob@10.4.0.1:3128"]);
  });

  it("--template adds N sessions per label value; list --label picks a country; again it updates", async () => {
    const args = [
      "import",
      "--template",
      "http://cust-{session}-country-{country}:SECRETPW@gw.example:7777",
      "--sessions",
      "3",
      "--label",
      "country=us,de",
      "--tier",
      "residential",
      "--pool",
      "tpl",
    ];
    const r = await cli(...args);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/pool tpl: 6 added, 0 updated, 0 rejected/);
    const us = json<{ id: string; url: string; tier: string }[]>(await cli("list", "--pool", "tpl", "--label", "country=us", "--json"));
    expect(us.map((p) => p.id).sort()).toEqual([1, 2, 3].map((i) => `cust-sus0000${i}-country-us@gw.example:7777`));
    expect(us.every((p) => p.tier === "residential" && p.url.includes(":***@"))).toBe(true);
    expect(json<{ added: number; updated: number }>(await cli(...args, "--json"))).toMatchObject({ added: 0, updated: 6 });
  });

  it("says what is wrong with a template, never showing its password; usage errors exit 2", async () => {
    const bad = await cli("import", "--template", "http://c-{sesion}:SECRETPW@gw.example:1", "--pool", "bad");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/unknown placeholder at character 10:/);
    expect(bad.stdout + bad.stderr).not.toContain("SECRETPW");
    expect((await cli("import", join(dir, "dupes.txt"), "--template", "http://{session}@gw:1")).stderr).toMatch(/not both/);
    expect((await cli("import", join(dir, "dupes.txt"), "--label", "country=us")).code).toBe(2);
    expect((await cli("import", "--template", "http://u-{session}@gw:1", "--sessions", "0")).stderr).toMatch(/--sessions 0/);
    expect((await cli("import", "--template", "http://u-{session}@gw:1", "--label", "country")).stderr).toMatch(/not key=value/);
    expect((await cli("import")).code).toBe(2);
    expect((await b.admin.listProxies({ pool: "bad" })).proxies).toEqual([]);
  });
});
