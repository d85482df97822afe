/**
 * Every printable ASCII character (and a few others) inside a password or a source's secrets,
 * through every output that shows a proxy or a source URL: `list` and `list --json`, `import`'s
 * rejected lines (text and `--json`), template errors, `source add|list|refresh|remove` (text and
 * `--json`), `/status.json`, `audit`, and log lines — the broker's own, the logger's, and a start
 * refused over a proxies file. A real broker process (embedded store, a health checker so that it
 * refreshes sources), the CLI run in this process as in the other CLI tests. The secrets are
 * marked `PWA…PWZ`: neither mark may appear anywhere.
 */
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import type { Server } from "node:http";
import { Writable } from "node:stream";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { parseProxySpec } from "@proxybroker/sdk/model";
import { brokerProcess, freePort } from "../../support/broker-process.js";
import type { BrokerProcess } from "../../support/broker-process.js";
import { runCliHere, type Ran } from "../../support/cli-here.js";
import { startForwardProxy } from "../../support/forward-proxy.js";
import type { ForwardProxy } from "../../support/forward-proxy.js";
import { startListServer } from "../../support/list-server.js";
import type { ListServer } from "../../support/list-server.js";
import { tsEntryArgs } from "../../support/node-ts.js";
import { createLogger } from "../../../src/observe/log.js";
import { BrokerError } from "../../../src/grpc/errors.js";
import * as grpc from "@grpc/grpc-js";
import { ProxyBroker } from "@proxybroker/sdk/gen/proxybroker/v1/broker_pb";
import { createClient } from "@proxybroker/sdk/wire";

const CHARS = [...Array.from({ length: 95 }, (_, k) => String.fromCharCode(0x20 + k)), "é", "ß", "€", "日", "😀", "\u00a0"];
const secret = (c: string): string => `PWA${c}PWZ`;
/** A password that starts like a port (`4242`), for where a URL parser may take it for one. */
const portLike = (c: string): string => `4242${c}PWZ`;

/** The lines of `text` that carry a mark of a secret (none, or the test fails naming them). */
function leaks(text: string, marks: readonly string[] = ["PWA", "PWZ"]): string[] {
  return text
    .split("\n")
    .filter((l) => marks.some((m) => l.includes(m)))
    .slice(0, 5);
}

function expectNoSecret(what: string, text: string, marks?: readonly string[]): void {
  expect(leaks(text, marks), what).toEqual([]);
}

describe("no secret in any output, for every character", () => {
  let broker: BrokerProcess;
  let dir = "";
  let target: Server;
  let list: ListServer;
  /** A proxy that works, so that the pools of the sources have one to grant. */
  let forward: ForwardProxy;
  let metricsAddress = "";
  /** A loopback port nothing listens on (probes fail at once, no traffic leaves the machine). */
  let idle = 0;

  const cli = (...args: string[]): Promise<Ran> => runCliHere([...args, "--address", broker.address]);
  const both = (r: Ran): string => r.stdout + r.stderr;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "pb-redact-"));
    await writeFile(join(dir, "empty.txt"), "");
    target = createServer((_req, res) => res.writeHead(200).end("ok"));
    const port = await freePort();
    await new Promise<void>((r) => target.listen(port, "127.0.0.1", r));
    do idle = await freePort();
    while (String(idle).includes("4242"));
    forward = await startForwardProxy();
    list = await startListServer();
    list.answer(200, `${new URL(forward.url).host}\n`);
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
        LOG_LEVEL: "debug",
      },
    });
    await broker.start();
  }, 60_000);

  afterAll(async () => {
    await broker?.stop();
    await list?.close();
    await forward?.close();
    await new Promise<void>((r) => target?.close(() => r()));
    if (dir !== "") await rm(dir, { recursive: true, force: true });
  });

  it("import (text and --json) and list (text and --json): no password, nor where one was cut", { timeout: 120_000 }, async () => {
    const lines = CHARS.flatMap((c, i) => {
      const plain = `http://u${i}:${secret(c)}@127.77.${i}.1:${idle}`;
      return [
        plain,
        // the same proxy again: the broker rejects it, and shows it
        plain,
        `http://d${i}:${portLike(c)}@127.78.${i}.1:${idle}`,
        `http://t${i}:${secret(c)}@127.79.${i}.1:${idle} tier=dc via=file`,
      ];
    });
    const file = join(dir, "proxies.txt");
    await writeFile(file, `${lines.join("\n")}\n`);
    const text = await cli("import", file, "--pool", "file");
    const asJson = await cli("import", file, "--pool", "file", "--json");
    for (const [what, r] of [
      ["import", text],
      ["import --json", asJson],
    ] as const) {
      expect(r.code, r.stderr).toBe(3);
      expectNoSecret(what, both(r), ["PWA", "PWZ", "4242"]);
    }
    // rejected by the CLI (a space, or a "/" "?" "#" "\" ending the authority) and by the broker (twice)
    expect(text.stdout).toMatch(/line 6: http:\/\/u1:\*\*\*@127\.77\.1\.1:\d+: proxy u1@127\.77\.1\.1:\d+ appears twice/);
    expect(text.stdout).toMatch(/line 1: http:\/\/u0…: word 2 of the line is not key=value/);
    expect(text.stdout).toMatch(/: http:\/\/d\d+…: proxy url must not have a path, query or fragment/);
    const listed = await cli("list", "--pool", "file");
    const listedJson = await cli("list", "--pool", "file", "--json");
    expect(listed.code, listed.stderr).toBe(0);
    expectNoSecret("list", both(listed), ["PWA", "PWZ", "4242"]);
    expectNoSecret("list --json", both(listedJson), ["PWA", "PWZ", "4242"]);
    const proxies = JSON.parse(listedJson.stdout) as { id: string; url: string }[];
    // every character but the six that end an authority or a word ("/", "?", "#", "\\", two spaces) made a proxy
    expect(proxies.filter((p) => p.id.startsWith("u")).length).toBe(CHARS.length - 6);
    expect(proxies.every((p) => /^http:\/\/[a-z]\d+:\*\*\*@127\.7\d\.\d+\.1:\d+$/.test(p.url))).toBe(true);
  });

  it("import --template: no password in its proxies, its rejected ones or its errors", { timeout: 120_000 }, async () => {
    const outputs: [string, Ran][] = [];
    for (const [i, c] of CHARS.entries()) {
      const host = `127.80.${i}.1:${idle}`;
      outputs.push([
        `template ${JSON.stringify(c)}`,
        await cli("import", "--template", `http://c${i}-{session}:${secret(c)}@${host}`, "--pool", "tpl"),
      ]);
      // braces in a password are placeholders: an unknown one is named by its place
      const braced = await cli("import", "--template", `http://c${i}-{session}:{${secret(c)}}@${host}`, "--pool", "tpl", "--json");
      expectNoSecret(`braced template ${JSON.stringify(c)}`, both(braced));
      expect(braced.code).toBe(2);
      expect(braced.stderr).toMatch(/template: template url (has an unknown placeholder at character \d+|has an unmatched \{ or \})/);
    }
    for (const [what, r] of outputs) expectNoSecret(what, both(r));
    const listed = await cli("list", "--pool", "tpl");
    const listedJson = await cli("list", "--pool", "tpl", "--json");
    expectNoSecret("list of templates", both(listed));
    expectNoSecret("list --json of templates", both(listedJson));
    expect((JSON.parse(listedJson.stdout) as unknown[]).length).toBeGreaterThan(CHARS.length - 10);
  });

  it("sources: add, list, refresh, remove, status.json and audit show no userinfo, token, query value or fragment", {
    timeout: 180_000,
  }, async () => {
    const base = new URL(list.url);
    const urls: [pool: string, url: string][] = [];
    for (const [i, c] of CHARS.entries()) {
      const e = encodeURIComponent(secret(c));
      urls.push([`srca${i % 2}`, `http://${e}:${e}@${base.host}/download/${e}/list?key=${e}&${e}=1#${e}`]);
      urls.push([`srcb${i % 2}`, `http://${base.host}/download/${secret(c)}/list?key=${secret(c)}&${secret(c)}=1#${secret(c)}`]);
    }
    // one source per URL as parsed (a "\\" in a path is a "/")
    const distinct = (pool: string): number => new Set(urls.filter(([p]) => p === pool).map(([, u]) => new URL(u).toString())).size;
    const outputs: [string, Ran][] = [];
    for (const [pool, url] of urls) {
      const r = await cli("source", "add", url, "--pool", pool);
      expect(r.code, r.stderr).toBe(0);
      outputs.push([`source add ${url}`, r]);
    }
    // each pool gets a proxy that works (its sources are fetched in their turn, and those with userinfo never)
    const pools = ["srca0", "srca1", "srcb0", "srcb1"];
    for (const pool of pools) {
      const file = join(dir, `${pool}.txt`);
      await writeFile(file, `${new URL(forward.url).host}\n`);
      await cli("import", file, "--pool", pool);
    }
    const [firstPool, firstUrl] = urls[7] ?? ["", ""];
    outputs.push(["source refresh", await cli("source", "refresh", firstUrl, "--pool", firstPool)]);
    outputs.push(["source refresh --json", await cli("source", "refresh", firstUrl, "--pool", firstPool, "--json")]);
    outputs.push(["source refresh of none", await cli("source", "refresh", `${firstUrl}x`, "--pool", firstPool)]);
    for (const pool of pools) {
      outputs.push([`source list ${pool}`, await cli("source", "list", "--pool", pool)]);
      const listed = await cli("source", "list", "--pool", pool, "--json");
      expect((JSON.parse(listed.stdout) as unknown[]).length).toBe(distinct(pool));
      outputs.push([`source list --json ${pool}`, listed]);
    }
    const audit = await cli("audit", "--json", "--limit", "1000");
    expect(audit.stdout).toContain("AddSource");
    outputs.push(["audit", audit]);
    for (const [what, r] of outputs) expectNoSecret(what, both(r));
    // the status page shows the pools this broker served: a lease in each
    const channel = new grpc.Client(broker.address, grpc.credentials.createInsecure());
    const api = createClient(ProxyBroker, channel);
    for (const pool of pools) {
      await vi.waitFor(() => api.acquireLease({ pool, workerId: "w1", requestId: `r-${pool}`, domain: "shop.example" }), {
        timeout: 30_000,
        interval: 200,
      });
    }
    channel.close();
    const statusJson = await vi.waitFor(
      async () => {
        const text = await (await fetch(`http://${metricsAddress}/status.json`)).text();
        const shown = JSON.parse(text) as { pools: { pool: string; sources: unknown[] }[] };
        for (const pool of pools) expect(shown.pools.find((p) => p.pool === pool)?.sources.length).toBe(distinct(pool));
        return text;
      },
      { timeout: 30_000, interval: 200 },
    );
    expectNoSecret("status.json", statusJson.replaceAll("},{", "},\n{"));
    expect(statusJson).toContain(`"url":"http://${base.host}/download/***/list?key=***&***=***"`);
    const [lastPool, lastUrl] = urls.at(-1) ?? ["", ""];
    const removed = await cli("source", "remove", lastUrl, "--pool", lastPool);
    expect(removed.stdout).toMatch(/removed source http:\/\/127\.0\.0\.1:\d+\/download\/\*\*\*\/list/);
    expectNoSecret("source remove", both(removed));
  });

  it("log lines: the broker's, the logger's for every character, and a start refused over a proxies file", {
    timeout: 120_000,
  }, async () => {
    expect(broker.output()).toMatch(/listening on/);
    expectNoSecret("the broker's log", broker.output());

    const chunks: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        chunks.push(chunk.toString());
        done();
      },
    });
    const log = createLogger({ env: {}, destination: sink });
    for (const c of CHARS) {
      const typed = `http://u:${secret(c)}@127.0.0.1:${idle}`;
      let stored = "";
      try {
        stored = parseProxySpec({ url: typed, tier: "", labels: {} }).url;
      } catch {
        stored = "";
      }
      // a URL as stored (its password percent-encoded where it must be) in a message, a field, an error
      if (stored !== "") {
        log.info(`proxy ${stored} failed`);
        log.warn({ proxy: { url: stored }, urls: [stored] }, "fields");
        log.error(new BrokerError(grpc.status.INTERNAL, `upstream "${stored}" refused`).message);
      }
      // as typed: found whole unless it holds a space, which ends a word (no message quotes a URL as typed)
      if (!/\s/.test(c)) log.info(`proxy "${typed}" refused (${typed})`);
    }
    expect(chunks.length).toBeGreaterThan(CHARS.length * 3);
    expectNoSecret("log lines", chunks.join(""));

    // the broker refuses to start over a bad line of its proxies file: the line, never the password
    const file = join(dir, "bad-proxies.txt");
    await writeFile(file, `127.0.0.1:${idle}\nhttp://u:${secret(`'"()/:@ #`)}@127.0.0.1:${idle}\n`);
    const proc = spawn(process.execPath, tsEntryArgs("src/main.ts"), {
      env: { ...process.env, REDIS_URL: "", LISTEN_ADDRESS: `127.0.0.1:${await freePort()}`, PROXIES_FILE: file },
    });
    let out = "";
    proc.stderr.on("data", (d: Buffer) => (out += d.toString()));
    proc.stdout.on("data", (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((resolve) => proc.once("exit", (c) => resolve(c)));
    expect(code).not.toBe(0);
    expect(out).toMatch(/failed to start: .*bad-proxies\.txt:2: /);
    expectNoSecret("a refused start", out);
  });
});
