/**
 * Test helpers for crawling through the gateway: the crawl harness's strict site rules, what a
 * site's own log says of a crawl (429s, bans, overlaps, which proxy IPs came), a plain-HTTP
 * request through the gateway, and a Prometheus sample read from a metrics text.
 */
import { request } from "node:http";
import type { IncomingHttpHeaders } from "node:http";
import { countOverlaps } from "../../crawl/sites.js";
import type { SiteRules, Sites } from "../../crawl/sites.js";

/**
 * As strict as the crawl harness's sites: one request in flight per client IP, arrivals at least
 * `minIntervalMs` apart with no tolerance (else 429), 3 violations ban the IP; fast pages.
 */
export function strictRules(minIntervalMs: number): SiteRules {
  return { minIntervalMs, toleranceMs: 0, violationsToBan: 3, violationWindowMs: 60_000, banMs: 20_000, pageDelayMs: [2, 8] };
}

/** What one site's log and counters say. */
export interface SiteVerdict {
  readonly requests: number;
  readonly rateLimited: number;
  readonly bans: number;
  /** Pairs of requests from one IP in flight at once. */
  readonly overlaps: number;
  /** Requests by client IP (the proxy's outgoing address). */
  readonly byIp: ReadonlyMap<string, number>;
  /** The shortest time between two arrivals from one IP, ms (Infinity: no IP came twice). */
  readonly minGapMs: number;
}

/** The verdict of the site at `host` (`127.0.1.x:port`), from its own log. */
export function siteVerdict(sites: Sites, host: string): SiteVerdict {
  const log = sites.log.filter((e) => e.site === host);
  const c = sites.counters(host);
  const byIp = new Map<string, number>();
  const starts = new Map<string, number[]>();
  for (const e of log) {
    byIp.set(e.ip, (byIp.get(e.ip) ?? 0) + 1);
    starts.set(e.ip, [...(starts.get(e.ip) ?? []), e.start]);
  }
  let minGapMs = Number.POSITIVE_INFINITY;
  for (const list of starts.values()) {
    list.sort((a, b) => a - b);
    for (let i = 1; i < list.length; i++) minGapMs = Math.min(minGapMs, (list[i] ?? 0) - (list[i - 1] ?? 0));
  }
  return { requests: log.length, rateLimited: c.rateLimited, bans: c.bans, overlaps: countOverlaps(log), byIp, minGapMs };
}

export interface GatewayAnswer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/**
 * A plain-HTTP GET of `url` through the gateway at `gateway` (`host:port`): absolute form, no
 * keep-alive; `auth` the proxy credentials (`user:password`), `headers` more request headers.
 */
export function getThrough(
  gateway: string,
  url: string,
  opts: { readonly auth?: string; readonly headers?: Readonly<Record<string, string>> } = {},
): Promise<GatewayAnswer> {
  const [host, port] = gateway.split(":");
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host,
        port: Number(port),
        path: url,
        agent: false,
        headers: {
          host: new URL(url).host,
          ...(opts.auth === undefined ? {} : { "proxy-authorization": `Basic ${Buffer.from(opts.auth).toString("base64")}` }),
          ...opts.headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end();
  });
}

/** The value of the sample `name` (with exactly `labels`, as written, e.g. `{outcome="SUCCESS"}`) in a metrics text; 0 when absent. */
export function metricValue(text: string, name: string, labels = ""): number {
  const line = text.split("\n").find((l) => l.startsWith(`${name}${labels} `));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(" ") + 1));
}
