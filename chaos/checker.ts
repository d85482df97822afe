/**
 * The chaos harness's independent checker: pure functions over what was recorded — the sites'
 * request log (the ground truth: what the sites really saw), the workers' lease logs, and the
 * broker's answers at the end of the run. It trusts neither the broker nor the SDK, only their
 * effects. Checks:
 *
 * 1. overlaps: two requests from one client IP (one proxy) at one site in flight at once;
 * 2. fencing: per (proxy, domain-key), tokens strictly increase in grant order (no token repeated,
 *    none lower than one granted before), and a lease handed over goes on under a higher token;
 * 3. proxies back: every proxy of the run is in the pool at the end, ACTIVE;
 * 4. busy leases: one TTL after the last worker stopped, every (proxy, domain-key) pair can be
 *    acquired by proxy id (nothing is still held);
 * 5. with an isolation group (CHAOS_ISOLATION): no client IP inside two sites at once, and every
 *    site's policy still names the group at the end (chaos/cross-site.ts).
 */
import { checkIsolationGroup, isolationFailures, NO_ISOLATION } from "./cross-site.js";
import type { IsolationInput, IsolationResult } from "./cross-site.js";
import type { LeaseLine, LeaseRecord, SiteRequest } from "./records.js";

/** Two requests of one client IP at one site that were in flight at the same time. */
export interface Overlap {
  readonly site: string;
  readonly ip: string;
  readonly first: SiteRequest;
  readonly second: SiteRequest;
}

/** Every overlapping pair of requests, per (site, client IP), in order of the second's start. */
export function findOverlaps(requests: readonly SiteRequest[]): Overlap[] {
  const byPair = new Map<string, SiteRequest[]>();
  for (const r of requests) {
    const key = `${r.site} ${r.ip}`;
    const list = byPair.get(key);
    if (list === undefined) byPair.set(key, [r]);
    else list.push(r);
  }
  const out: Overlap[] = [];
  for (const list of byPair.values()) {
    list.sort((a, b) => a.start - b.start || a.end - b.end);
    for (let i = 0; i < list.length; i++) {
      const a = list[i];
      if (a === undefined) continue;
      for (let j = i + 1; j < list.length; j++) {
        const b = list[j];
        // sorted by start: once one starts at or after a's end, none later overlaps a
        if (b === undefined || b.start >= a.end) break;
        out.push({ site: a.site, ip: a.ip, first: a, second: b });
      }
    }
  }
  return out.sort((x, y) => x.second.start - y.second.start);
}

/**
 * Join grant and end lines into leases. A lease is identified by its worker process (worker id
 * and generation) and lease id; an end line without a grant line is ignored (it cannot happen
 * unless a log was cut), a grant without an end is a lease its worker was killed holding.
 */
export function joinLeases(lines: readonly LeaseLine[]): LeaseRecord[] {
  const ends = new Map<string, LeaseLine & { t: "end" }>();
  for (const l of lines) if (l.t === "end") ends.set(`${l.worker}/${l.gen}/${l.lease}`, l);
  const out: LeaseRecord[] = [];
  for (const l of lines) {
    if (l.t !== "grant") continue;
    const end = ends.get(`${l.worker}/${l.gen}/${l.lease}`);
    out.push({
      worker: l.worker,
      gen: l.gen,
      kind: l.kind,
      api: l.api,
      lease: l.lease,
      proxy: l.proxy,
      domain: l.domain,
      token: l.token,
      source: l.source,
      grantedAt: l.at,
      ...(end !== undefined ? { end } : {}),
    });
  }
  return out;
}

/** A fencing token out of order. */
export interface TokenViolation {
  readonly proxy: string;
  readonly domain: string;
  /**
   * `repeated`: a token already granted on the pair; `decreasing`: lower than one granted
   * before; `handover`: a lease handed over went on under a token not above its own.
   */
  readonly kind: "repeated" | "decreasing" | "handover";
  /** The lease that held the highest token so far (for `handover`: the lease itself). */
  readonly earlier: LeaseRecord;
  readonly later: LeaseRecord;
}

function big(token: string): bigint {
  return /^\d+$/.test(token) ? BigInt(token) : -1n;
}

/** A token a lease held on its pair, from a moment on: its grant, or its hand-over. */
interface TokenEvent {
  readonly at: number;
  readonly token: bigint;
  readonly lease: LeaseRecord;
  readonly handover: boolean;
}

/**
 * The token events of a lease: its grant at `grantedAt`; and when it ended under another
 * identity (an SDK fallback lease handed over to the broker), that token from the end of its
 * use on — the hand-over happened somewhere in between, and any grant of the pair in between
 * is an overlap, which the sites' log shows.
 */
function tokenEvents(l: LeaseRecord): TokenEvent[] {
  const first: TokenEvent = { at: l.grantedAt, token: big(l.token), lease: l, handover: false };
  if (l.end === undefined || l.end.finalLease === l.lease) return [first];
  return [first, { at: l.end.at, token: big(l.end.finalToken), lease: l, handover: true }];
}

/**
 * Per (proxy, domain-key), in grant order (the time the grant reached its worker; ties by token),
 * every lease's token must be above every token held on that pair before it, and a lease handed
 * over must go on under a token above its own.
 */
export function checkFencing(leases: readonly LeaseRecord[]): TokenViolation[] {
  const byPair = new Map<string, TokenEvent[]>();
  // a gateway client sees no token (the gateway holds the lease); the sites' log judges its requests
  for (const l of leases.filter((x) => x.kind !== "gateway")) {
    const key = `${l.proxy} ${l.domain}`;
    const list = byPair.get(key) ?? [];
    list.push(...tokenEvents(l));
    byPair.set(key, list);
  }
  const out: TokenViolation[] = [];
  for (const events of byPair.values()) {
    events.sort((a, b) => a.at - b.at || cmp(a.token, b.token));
    let highest: { readonly token: bigint; readonly lease: LeaseRecord } | undefined;
    for (const e of events) {
      const l = e.lease;
      if (e.handover) {
        if (e.token <= big(l.token)) out.push({ proxy: l.proxy, domain: l.domain, kind: "handover", earlier: l, later: l });
      } else if (highest !== undefined && e.token <= highest.token) {
        out.push({
          proxy: l.proxy,
          domain: l.domain,
          kind: e.token === highest.token ? "repeated" : "decreasing",
          earlier: highest.lease,
          later: l,
        });
      }
      if (highest === undefined || e.token > highest.token) highest = { token: e.token, lease: l };
    }
  }
  return out;
}

function cmp(a: bigint, b: bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A proxy as the admin API lists it at the end. */
export interface ListedProxy {
  readonly id: string;
  /** `ACTIVE`, `QUARANTINED`, `BLACKLISTED`, … */
  readonly state: string;
}

/** A proxy of the run that is not back in the pool: missing, or not ACTIVE. */
export interface NotBack {
  readonly id: string;
  readonly why: string;
}

export function proxiesNotBack(expected: readonly string[], listed: readonly ListedProxy[]): NotBack[] {
  const byId = new Map(listed.map((p) => [p.id, p]));
  const out: NotBack[] = [];
  for (const id of expected) {
    const p = byId.get(id);
    if (p === undefined) out.push({ id, why: "missing from the pool" });
    else if (p.state !== "ACTIVE") out.push({ id, why: p.state });
  }
  return out;
}

/** The end-of-run probe of one (proxy, domain-key) pair: an acquire of that very proxy. */
export interface PairProbe {
  readonly proxy: string;
  readonly domain: string;
  readonly granted: boolean;
  /** The broker's answer when not granted (status, retry-after). */
  readonly detail: string;
}

/** The pairs still busy one TTL after the last worker stopped. */
export function busyPairs(probes: readonly PairProbe[]): PairProbe[] {
  return probes.filter((p) => !p.granted);
}

/** The leases of a pair that may have been in use at `at`: granted by then, not ended before. */
export function leasesAt(
  leases: readonly LeaseRecord[],
  pair: { readonly proxy: string; readonly domain: string },
  at: number,
  horizonMs: number,
): LeaseRecord[] {
  return leases.filter(
    (l) =>
      l.proxy === pair.proxy &&
      l.domain === pair.domain &&
      l.grantedAt <= at &&
      (l.end !== undefined ? l.end.at >= at : at - l.grantedAt <= horizonMs),
  );
}

/** Everything the checker is given. */
export interface CheckInput {
  readonly requests: readonly SiteRequest[];
  readonly leases: readonly LeaseRecord[];
  /** The proxies of the run (`host:port`). */
  readonly expectedProxies: readonly string[];
  /** What ListProxies answered at the end. */
  readonly listed: readonly ListedProxy[];
  readonly probes: readonly PairProbe[];
  /** The isolation group's sites and policies; absent: no group, no cross-site count. */
  readonly isolation?: IsolationInput;
}

export interface CheckResult {
  readonly overlaps: readonly Overlap[];
  readonly tokenViolations: readonly TokenViolation[];
  readonly notBack: readonly NotBack[];
  readonly busy: readonly PairProbe[];
  readonly isolation: IsolationResult;
  /** One line per failed check (empty: every check passed). */
  readonly failures: readonly string[];
}

export function check(input: CheckInput): CheckResult {
  const overlaps = findOverlaps(input.requests);
  const tokenViolations = checkFencing(input.leases);
  const notBack = proxiesNotBack(input.expectedProxies, input.listed);
  const busy = busyPairs(input.probes);
  const isolation = input.isolation === undefined ? NO_ISOLATION : checkIsolationGroup(input.requests, input.isolation);
  const failures: string[] = [];
  if (overlaps.length > 0) failures.push(`${overlaps.length} overlaps at the sites`);
  if (tokenViolations.length > 0) failures.push(`${tokenViolations.length} fencing token violations`);
  if (notBack.length > 0) failures.push(`${notBack.length} proxies not back in the pool`);
  if (busy.length > 0) failures.push(`${busy.length} (proxy, domain) pairs still busy one TTL after the last worker stopped`);
  failures.push(...isolationFailures(isolation));
  if (input.probes.length === 0) failures.push("no (proxy, domain) pair was probed at the end");
  if (input.leases.length === 0) failures.push("no lease was granted");
  return { overlaps, tokenViolations, notBack, busy, isolation, failures };
}
