/**
 * The status page and `/status.json` of a broker process with AUTH_TOKENS_FILE: an admin token
 * only (Bearer, or a browser's Basic with the token as password), a 401 that makes a browser ask,
 * a worker token refused; `/metrics` open; the tokens read again on SIGHUP apply here too.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { brokerProcess, freePort } from "../../../support/broker-process.js";
import type { BrokerProcess } from "../../../support/broker-process.js";

const ADMIN = "status-admin-token-0123456789";
const WORKER = "status-worker-token-012345678";
const NEXT = "status-next-admin-token-98765";

const basic = (token: string): string => `Basic ${Buffer.from(`anyone:${token}`).toString("base64")}`;

describe("the status page with AUTH_TOKENS_FILE", () => {
  let broker: BrokerProcess;
  let dir = "";
  let base = "";

  const get = (path: string, authorization?: string): Promise<Response> =>
    fetch(`${base}${path}`, authorization === undefined ? {} : { headers: { authorization } });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "pb-status-access-"));
    await writeFile(join(dir, "tokens"), `${ADMIN} admin ops\n${WORKER} worker fleet\n`);
    await writeFile(join(dir, "empty.txt"), "");
    base = `http://127.0.0.1:${await freePort()}`;
    broker = await brokerProcess({
      redisUrl: "",
      env: { AUTH_TOKENS_FILE: join(dir, "tokens"), PROXIES_FILE: join(dir, "empty.txt"), METRICS_ADDRESS: base.slice("http://".length) },
    });
    await broker.start();
  }, 60_000);

  afterAll(async () => {
    await broker?.stop();
    if (dir !== "") await rm(dir, { recursive: true, force: true });
  });

  it("needs an admin token: none or an unknown one is 401 with a Basic challenge, a worker's 403", async () => {
    for (const path of ["/", "/status.json"]) {
      const none = await get(path);
      expect(none.status).toBe(401);
      expect(none.headers.get("www-authenticate")).toMatch(/^Basic realm="proxybroker status"/);
      expect(await none.text()).not.toContain('"pools"');
      expect((await get(path, "Bearer not-a-token-of-this-broker")).status).toBe(401);
      expect((await get(path, basic("not-a-token-of-this-broker"))).status).toBe(401);
      expect((await get(path, `Bearer ${WORKER}`)).status).toBe(403);
      expect((await get(path, basic(WORKER))).status).toBe(403);
    }
  });

  it("an admin token opens the page and its data, as Bearer or as a browser's Basic password; /metrics needs none", async () => {
    const json = await get("/status.json", `Bearer ${ADMIN}`);
    expect(json.status).toBe(200);
    expect(await json.json()).toHaveProperty("pools");
    const page = await get("/", basic(ADMIN));
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("status.json");
    expect((await get("/status.json", basic(ADMIN))).status).toBe(200);
    expect((await get("/metrics")).status).toBe(200);
  });

  it("follows the tokens read again on SIGHUP", { timeout: 30_000 }, async () => {
    await writeFile(join(dir, "tokens"), `${NEXT} admin ops\n`);
    process.kill(broker.pid() ?? 0, "SIGHUP");
    await vi.waitFor(() => expect(broker.output()).toMatch(/SIGHUP: 1 token\(s\)/), { timeout: 20_000, interval: 50 });
    expect((await get("/status.json", `Bearer ${ADMIN}`)).status).toBe(401);
    expect((await get("/status.json", `Bearer ${NEXT}`)).status).toBe(200);
  });
});
