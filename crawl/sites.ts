/**
 * The crawl harness's target sites: S HTTP servers, site i on 127.0.1.(i+1) (its own address, so
 * every site is its own domain-key for the broker, which ignores ports) on a free port. Each site
 * applies its own anti-bot rules per client IP (the proxy's outgoing 127.0.0.x address), as strict
 * as real anti-bot systems by default:
 *
 * - at most one request in flight, and two request *arrivals* at least `minIntervalMs` apart
 *   (minus `toleranceMs`, 0 by default: no forgiveness for jitter): a violation answers 429;
 * - `violationsToBan` violations within `violationWindowMs` ban the IP for `banMs`; while banned,
 *   even sites answer 403 block pages and odd sites 200 captcha pages (no content marker).
 *
 * The sites count per site and per client IP (what a real site keys its limits on): requests,
 * 429s, bans, block and captcha pages, and arrivals closer than the rule (too fast, whatever else
 * was in flight). Every request is logged (site, client IP, start, end, what was answered). With `tls` the sites
 * serve HTTPS instead (the harness's HTTPS mode), under the same rules: the client IP is the TLS
 * connection's peer, and a kept-alive connection's requests are judged one by one.
 */
import { createServer } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { IncomingMessage, Server, ServerResponse } from "node:http";

export const CONTENT_MARKER = '<div id="content">';

export type Answer = "page" | "stream" | "429" | "block" | "captcha" | "404";

export interface RequestLogEntry {
  readonly site: string;
  readonly ip: string;
  readonly start: number;
  end: number;
  readonly answer: Answer;
  /** The request's path (to tell which worker sent it, from the workers' reports). */
  readonly path?: string;
}

export interface SiteRules {
  readonly minIntervalMs: number;
  readonly toleranceMs: number;
  readonly violationsToBan: number;
  readonly violationWindowMs: number;
  readonly banMs: number;
  /** Server time of a page, ms: uniform in [min, max]. */
  readonly pageDelayMs: readonly [number, number];
}

export interface SitesOptions {
  /** One entry per site, in order. */
  readonly rules: readonly SiteRules[];
  /** Serve HTTPS with this certificate (it must cover every `siteAddress`); unset: plain HTTP. */
  readonly tls?: { readonly cert: Buffer; readonly key: Buffer };
}

/** The address of site i (from 0): 127.0.1.(i+1). */
export function siteAddress(i: number): string {
  return `127.0.1.${i + 1}`;
}

export interface Site {
  /** `127.0.1.x:port` */
  readonly host: string;
  /** `http://127.0.1.x:port` (`https://` with `tls`) */
  readonly origin: string;
  readonly banMode: "block" | "captcha";
  readonly rules: SiteRules;
}

export interface SitesCounters {
  readonly requests: number;
  readonly rateLimited: number;
  readonly bans: number;
  readonly blockPages: number;
  readonly captchaPages: number;
  /** Arrivals of an IP less than the rule (minus the tolerance) after its previous one at the site. */
  readonly tooFast: number;
}

export interface Sites {
  readonly sites: readonly Site[];
  readonly log: readonly RequestLogEntry[];
  /** Counters of every site together, or of the site with this host. */
  counters(host?: string): SitesCounters;
  /** Counters of one client IP: at every site, or at the sites with these hosts. */
  addressCounters(ip: string, hosts?: readonly string[]): SitesCounters;
  /** Every client IP the sites saw since the last reset. */
  addresses(): string[];
  /** Forget every IP's state, the log and the counters. */
  reset(): void;
  close(): Promise<void>;
}

interface IpState {
  inFlight: number;
  lastStart: number;
  violations: number[];
  bannedUntil: number;
}

type MutableCounters = { -readonly [K in keyof SitesCounters]: SitesCounters[K] };

const FILLER = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(30);

function freshCounters(): MutableCounters {
  return { requests: 0, rateLimited: 0, bans: 0, blockPages: 0, captchaPages: 0, tooFast: 0 };
}

function addInto(total: MutableCounters, c: SitesCounters): void {
  total.requests += c.requests;
  total.rateLimited += c.rateLimited;
  total.bans += c.bans;
  total.blockPages += c.blockPages;
  total.captchaPages += c.captchaPages;
  total.tooFast += c.tooFast;
}

interface SiteContext {
  readonly site: Site;
  readonly rules: SiteRules;
  readonly states: Map<string, IpState>;
  readonly log: RequestLogEntry[];
  /** The counters to bump for a request of this IP: the site's, and the site's for the IP. */
  readonly counters: (ip: string) => readonly MutableCounters[];
}

function bump(all: readonly MutableCounters[], key: keyof MutableCounters): void {
  for (const c of all) c[key] += 1;
}

function stateOf(ctx: SiteContext, ip: string): IpState {
  let s = ctx.states.get(ip);
  if (s === undefined) {
    s = { inFlight: 0, lastStart: Number.NEGATIVE_INFINITY, violations: [], bannedUntil: 0 };
    ctx.states.set(ip, s);
  }
  return s;
}

/** Decide the answer to a request starting now (and update the IP's state). */
function judge(ctx: SiteContext, ip: string, s: IpState, now: number): "ok" | "429" | "banned" {
  const { rules } = ctx;
  const gap = now - s.lastStart;
  s.lastStart = now;
  if (gap < rules.minIntervalMs - rules.toleranceMs) bump(ctx.counters(ip), "tooFast");
  if (s.bannedUntil > now) return "banned";
  if (s.inFlight === 0 && gap >= rules.minIntervalMs - rules.toleranceMs) return "ok";
  s.violations = s.violations.filter((t) => now - t < rules.violationWindowMs);
  s.violations.push(now);
  if (s.violations.length >= rules.violationsToBan) {
    s.violations = [];
    s.bannedUntil = now + rules.banMs;
    bump(ctx.counters(ip), "bans");
  }
  return "429";
}

function send(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "text/html; charset=utf-8", "content-length": String(Buffer.byteLength(body)), ...headers });
  res.end(body);
}

function page(site: Site, path: string): string {
  return `<html><head><title>${site.host}${path}</title></head><body>${CONTENT_MARKER}<h1>${path}</h1><p>${FILLER}</p></div></body></html>`;
}

const BLOCK_PAGE =
  "<html><head><title>Access denied</title></head><body><h1>403 Forbidden</h1><p>Your IP has been blocked.</p></body></html>";
const CAPTCHA_PAGE =
  '<html><head><title>Security check</title></head><body><h1>Please verify you are a human</h1><form><div class="g-recaptcha">captcha</div></form></body></html>';

function streamBody(res: ServerResponse, durationMs: number, onDone: () => void): void {
  res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
  res.write(`<html><body>${CONTENT_MARKER}<pre>`);
  const started = Date.now();
  const timer = setInterval(() => {
    if (Date.now() - started >= durationMs) {
      clearInterval(timer);
      res.end("</pre></div></body></html>");
      onDone();
      return;
    }
    res.write(`${"x".repeat(1000)}\n`);
  }, 100);
  res.once("close", () => clearInterval(timer));
}

function handle(ctx: SiteContext, req: IncomingMessage, res: ServerResponse): void {
  const start = Date.now();
  const ip = (req.socket.remoteAddress ?? "?").replace(/^::ffff:/, "");
  const url = new URL(req.url ?? "/", "http://x");
  const s = stateOf(ctx, ip);
  const counters = ctx.counters(ip);
  bump(counters, "requests");
  const verdict = judge(ctx, ip, s, start);
  const answer: Answer =
    verdict === "429"
      ? "429"
      : verdict === "banned"
        ? ctx.site.banMode
        : url.pathname === "/stream"
          ? "stream"
          : url.pathname.startsWith("/page/")
            ? "page"
            : "404";
  const entry: RequestLogEntry = { site: ctx.site.host, ip, start, end: start, answer, path: url.pathname };
  ctx.log.push(entry);
  s.inFlight += 1;
  let done = false;
  const finish = (): void => {
    if (done) return;
    done = true;
    s.inFlight -= 1;
    entry.end = Date.now();
  };
  res.once("finish", finish);
  res.once("close", finish);
  switch (answer) {
    case "429":
      bump(counters, "rateLimited");
      send(res, 429, "<html><body><h1>429 Too Many Requests</h1><p>Slow down.</p></body></html>", {
        "retry-after": String(Math.ceil(ctx.rules.minIntervalMs / 1000)),
      });
      return;
    case "block":
      bump(counters, "blockPages");
      send(res, 403, BLOCK_PAGE);
      return;
    case "captcha":
      bump(counters, "captchaPages");
      send(res, 200, CAPTCHA_PAGE);
      return;
    case "404":
      send(res, 404, "<html><body>not found</body></html>");
      return;
    case "stream":
      streamBody(res, Number(url.searchParams.get("ms") ?? "1000"), finish);
      return;
    case "page": {
      const [lo, hi] = ctx.rules.pageDelayMs;
      setTimeout(() => send(res, 200, page(ctx.site, url.pathname)), lo + Math.random() * (hi - lo));
      return;
    }
  }
}

async function listen(server: Server, address: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, address, () => {
      const a = server.address();
      resolve(typeof a === "object" && a !== null ? a.port : 0);
    });
  });
}

/** Start the sites; `reset()` between strategies, `close()` at the end. */
export async function startSites(options: SitesOptions): Promise<Sites> {
  const log: RequestLogEntry[] = [];
  let counters = new Map<string, MutableCounters>();
  const countersOf = (host: string): MutableCounters => {
    let c = counters.get(host);
    if (c === undefined) {
      c = freshCounters();
      counters.set(host, c);
    }
    return c;
  };
  const allStates: Array<Map<string, IpState>> = [];
  const servers: Server[] = [];
  const sites: Site[] = [];
  for (let i = 0; i < options.rules.length; i++) {
    const rules = options.rules[i]!;
    const address = siteAddress(i);
    const states = new Map<string, IpState>();
    allStates.push(states);
    const holder: { ctx?: SiteContext } = {};
    const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
      if (holder.ctx !== undefined) handle(holder.ctx, req, res);
    };
    const server: Server =
      options.tls === undefined
        ? createServer({ keepAlive: false }, onRequest)
        : createHttpsServer({ keepAlive: false, cert: options.tls.cert, key: options.tls.key }, onRequest);
    const port = await listen(server, address);
    const site: Site = {
      host: `${address}:${port}`,
      origin: `${options.tls === undefined ? "http" : "https"}://${address}:${port}`,
      banMode: i % 2 === 0 ? "block" : "captcha",
      rules,
    };
    holder.ctx = { site, rules, states, log, counters: (ip) => [countersOf(site.host), countersOf(`${site.host} ${ip}`)] };
    servers.push(server);
    sites.push(site);
  }
  return {
    sites,
    log,
    counters(host?: string): SitesCounters {
      if (host !== undefined) return { ...countersOf(host) };
      const total = freshCounters();
      for (const site of sites) addInto(total, countersOf(site.host));
      return total;
    },
    addressCounters(ip: string, hosts?: readonly string[]): SitesCounters {
      const total = freshCounters();
      for (const h of hosts ?? sites.map((s) => s.host)) addInto(total, countersOf(`${h} ${ip}`));
      return total;
    },
    addresses(): string[] {
      return [...new Set(log.map((e) => e.ip))].sort();
    },
    reset() {
      log.length = 0;
      counters = new Map();
      for (const m of allStates) m.clear();
    },
    async close() {
      await Promise.all(
        servers.map(
          (s) =>
            new Promise<void>((resolve) => {
              s.closeAllConnections();
              s.close(() => resolve());
            }),
        ),
      );
    },
  };
}

/** Pairs of requests from one IP to one site that were in flight at the same time. */
export function countOverlaps(log: readonly RequestLogEntry[]): number {
  const byPair = new Map<string, RequestLogEntry[]>();
  for (const e of log) {
    const k = `${e.site} ${e.ip}`;
    const list = byPair.get(k) ?? [];
    list.push(e);
    byPair.set(k, list);
  }
  let overlaps = 0;
  for (const list of byPair.values()) {
    list.sort((a, b) => a.start - b.start);
    for (let i = 0; i < list.length; i++) {
      const a = list[i];
      if (a === undefined) continue;
      for (let j = i + 1; j < list.length; j++) {
        const b = list[j];
        if (b === undefined || b.start >= a.end) break;
        overlaps += 1;
      }
    }
  }
  return overlaps;
}
