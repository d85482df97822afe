import { request } from "node:http";
import type { Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { startEchoSite } from "../support/echo-site.js";
import type { EchoSite } from "../support/echo-site.js";
import { startProviderSim } from "../support/provider-sim.js";
import type { ProviderSim, ProviderSimOptions } from "../support/provider-sim.js";

interface Answer {
  readonly status: number;
  readonly body: string;
}

function authHeader(proxy: URL): Record<string, string> {
  if (proxy.username === "") return {};
  const user = `${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`;
  return { "proxy-authorization": `Basic ${Buffer.from(user).toString("base64")}` };
}

/** GET `target` through `proxyUrl`, absolute-form. */
function getVia(proxyUrl: string, target: string): Promise<Answer> {
  const proxy = new URL(proxyUrl);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: proxy.hostname,
        port: Number(proxy.port),
        path: target,
        agent: false,
        headers: { host: new URL(target).host, ...authHeader(proxy) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

/** GET `target` inside a CONNECT tunnel through `proxyUrl`; the CONNECT's status when it is refused. */
function getViaTunnel(proxyUrl: string, target: string): Promise<Answer> {
  const proxy = new URL(proxyUrl);
  const site = new URL(target);
  return new Promise((resolve, reject) => {
    const connect = request({
      host: proxy.hostname,
      port: Number(proxy.port),
      method: "CONNECT",
      path: site.host,
      agent: false,
      headers: authHeader(proxy),
    });
    connect.on("connect", (res, socket: Socket) => {
      if (res.statusCode !== 200) {
        socket.destroy();
        resolve({ status: res.statusCode ?? 0, body: "" });
        return;
      }
      const get = request({ createConnection: () => socket, path: `${site.pathname}${site.search}`, headers: { host: site.host } }, (r) => {
        const chunks: Buffer[] = [];
        r.on("data", (c: Buffer) => chunks.push(c));
        r.on("end", () => {
          socket.destroy();
          resolve({ status: r.statusCode ?? 0, body: Buffer.concat(chunks).toString() });
        });
      });
      get.on("error", reject);
      get.end();
    });
    connect.on("error", reject);
    connect.end();
  });
}

function ipOf(answer: Answer): string {
  expect(answer.status).toBe(200);
  const parsed: unknown = JSON.parse(answer.body);
  if (typeof parsed !== "object" || parsed === null || !("ip" in parsed) || typeof parsed.ip !== "string") throw new Error(answer.body);
  return parsed.ip;
}

describe("provider simulator", () => {
  let sim: ProviderSim | undefined;
  let echo: EchoSite | undefined;
  afterEach(async () => {
    await sim?.close();
    await echo?.close();
    sim = undefined;
    echo = undefined;
  });

  const start = async (options: ProviderSimOptions): Promise<{ sim: ProviderSim; echo: EchoSite }> => {
    sim = await startProviderSim(options);
    echo = await startEchoSite();
    return { sim, echo };
  };

  for (const mode of ["username", "ports"] as const) {
    it(`${mode} mode: 12 sessions leave from 4 exits, each always from its own`, async () => {
      const { sim, echo } = await start({ mode, sessions: 12, exits: 4 });
      expect(sim.sessions).toHaveLength(12);
      expect(sim.exits).toEqual(["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"]);
      const seen = await Promise.all(sim.sessions.map(async (s) => ipOf(await getVia(s.url, echo.url))));
      expect(new Set(seen)).toEqual(new Set(sim.exits));
      for (const [i, s] of sim.sessions.entries()) expect(seen[i]).toBe(sim.exitOf(s.name));
      const again = await Promise.all(sim.sessions.map(async (s) => ipOf(await getVia(s.url, echo.url))));
      expect(again).toEqual(seen);
      expect([...sim.forwarded().values()].reduce((a, b) => a + b, 0)).toBe(24);
    });

    it(`${mode} mode: CONNECT tunnels leave from the session's exit too`, async () => {
      const { sim, echo } = await start({ mode, sessions: 6, exits: 3 });
      const seen = await Promise.all(sim.sessions.map(async (s) => ipOf(await getViaTunnel(s.url, echo.url))));
      expect(seen).toEqual(sim.sessions.map((s) => sim.exitOf(s.name)));
      expect(new Set(seen).size).toBe(3);
    });

    it(`${mode} mode: remap moves a session to another exit`, async () => {
      const { sim, echo } = await start({ mode, sessions: 4, exits: 2 });
      const s1 = sim.sessions[0]!;
      expect(ipOf(await getVia(s1.url, echo.url))).toBe("127.0.0.2");
      sim.remap(s1.name, "127.0.0.9");
      expect(ipOf(await getVia(s1.url, echo.url))).toBe("127.0.0.9");
      expect(ipOf(await getViaTunnel(s1.url, echo.url))).toBe("127.0.0.9");
    });
  }

  it("username mode: one endpoint, missing or wrong credentials get 407, any session name is served", async () => {
    const { sim, echo } = await start({ mode: "username", sessions: 3, password: "pw" });
    const endpoint = new URL(sim.sessions[0]!.url);
    expect(new Set(sim.sessions.map((s) => new URL(s.url).host)).size).toBe(1);
    expect(endpoint.username).toBe("cust-session-s1");
    const bare = `http://${endpoint.host}`;
    expect((await getVia(bare, echo.url)).status).toBe(407);
    expect((await getViaTunnel(bare, echo.url)).status).toBe(407);
    expect((await getVia(`http://cust-session-s1:nope@${endpoint.host}`, echo.url)).status).toBe(407);
    expect((await getVia(`http://someone-s1:pw@${endpoint.host}`, echo.url)).status).toBe(407);
    expect((await getViaTunnel(`http://cust-session-s1:nope@${endpoint.host}`, echo.url)).status).toBe(407);
    // a session the simulator did not list, with provider parameters after it
    const other = ipOf(await getVia(`http://cust-session-zz9-country-us:pw@${endpoint.host}`, echo.url));
    expect(other).toBe(sim.exitOf("zz9"));
    expect(echo.requests()).toBe(1);
  });

  it("ports mode: one port per session, no credentials needed", async () => {
    const { sim } = await start({ mode: "ports", sessions: 5, exits: 2 });
    const urls = sim.sessions.map((s) => new URL(s.url));
    expect(new Set(urls.map((u) => u.port)).size).toBe(5);
    expect(urls.every((u) => u.username === "")).toBe(true);
  });

  it("hash assignment is stable for a name and independent of order", async () => {
    const a = await startProviderSim({ mode: "username", sessions: 12, exits: 4, assignment: "hash" });
    const b = await startProviderSim({ mode: "username", sessions: 1, exits: 4, assignment: "hash" });
    try {
      expect(b.exitOf("s7")).toBe(a.exitOf("s7"));
      expect(a.exitOf("s7")).toBe(a.exitOf("s7"));
      expect(a.exits).toContain(a.exitOf("s7"));
    } finally {
      await a.close();
      await b.close();
    }
  });
});
