/**
 * Internal to the Redis store: what a pool remembers of its recent leases — the hold after a loss
 * of state and the longest TTL lately (holdState-1.lua, ensureEpoch-1.lua), the domain-keys
 * workers leased (domainUses-1.lua, rememberDomainUses-1.lua) — and the reservations that use
 * them (reserve-1.lua). lua/includes/lately.lua writes the records.
 */
import type { DomainUse, EpochRequest, EpochState, HoldState, Reservations } from "@proxybroker/sdk/model";
import { asArray, num, str } from "./replies.js";
import { argv } from "./script-args.js";
import { keyv } from "./script-keys.js";
import type { StoreEnv } from "./store-env.js";

/** Records put back per script call at most. */
const CHUNK = 500;

export async function ensureEpoch(env: StoreEnv, pool: string, request: EpochRequest): Promise<EpochState> {
  const keys = env.keys.pool(pool);
  const a = asArray(
    await env.runner.run(
      "ensureEpoch",
      keyv("ensureEpochKeys", { meta: keys.meta }),
      argv("ensureEpoch", {
        expected: request.expected,
        holdMs: Math.max(0, Math.floor(request.holdMs)),
        lost: request.lost ? 1 : 0,
        since: request.since !== undefined && request.since > 0 ? Math.floor(request.since) : "",
        now: env.now(),
      }),
    ),
  );
  return { epoch: str(a, 0), grantsFrom: num(a, 1) };
}

export async function holdState(env: StoreEnv, pool: string): Promise<HoldState> {
  const keys = env.keys.pool(pool);
  const a = asArray(await env.runner.run("holdState", keyv("holdStateKeys", { meta: keys.meta }), argv("holdState", { now: env.now() })));
  return { heldUntil: num(a, 0), longestTtlMs: num(a, 1), policyVersion: str(a, 2) };
}

export async function domainUses(env: StoreEnv, pool: string, sinceMs: number): Promise<DomainUse[]> {
  const keys = env.keys.pool(pool);
  const a = asArray(
    await env.runner.run(
      "domainUses",
      keyv("domainUsesKeys", { uses: keys.domainUses }),
      argv("domainUses", { since: Math.floor(sinceMs) }),
    ),
  );
  const out: DomainUse[] = [];
  for (let i = 0; i + 1 < a.length; i += 2) {
    const field = str(a, i);
    const value = str(a, i + 1);
    const cut = field.indexOf("\n");
    const times = /^(\d+):(\d+)$/.exec(value);
    if (cut <= 0 || times === null) continue;
    out.push({
      workerId: field.slice(0, cut),
      domainKey: field.slice(cut + 1),
      firstUsedAt: Number(times[1]),
      lastUsedAt: Number(times[2]),
    });
  }
  return out;
}

export async function rememberDomainUses(env: StoreEnv, pool: string, uses: readonly DomainUse[]): Promise<void> {
  const keys = env.keys.pool(pool);
  const uKeys = keyv("rememberDomainUsesKeys", { uses: keys.domainUses });
  for (let i = 0; i < uses.length; i += CHUNK) {
    const args = argv("rememberDomainUses", { now: env.now() });
    for (const u of uses.slice(i, i + CHUNK)) {
      args.push(
        ...argv("domainUse", {
          workerId: u.workerId,
          domainKey: u.domainKey,
          first: Math.floor(u.firstUsedAt),
          last: Math.floor(u.lastUsedAt),
        }),
      );
    }
    await env.runner.run("rememberDomainUses", uKeys, args);
  }
}

/**
 * Replace the pool's reservations: a proxy's field is its id, a domain-key's "\n" and the key, a
 * worker's scope "\t<worker>\n<domain-key>" per domain-key (value "1"), "\t<worker>" → "*"
 * for a worker whose proxies are reserved for every domain-key, and "\r<worker>" → when its
 * reservations hold for every caller (lua/includes/reservations.lua).
 */
export async function reserve(env: StoreEnv, pool: string, reserved: Reservations): Promise<void> {
  const keys = env.keys.pool(pool);
  const args: string[] = [];
  for (const [id, worker] of Object.entries(reserved.proxies)) args.push(id, String(worker));
  for (const [key, worker] of Object.entries(reserved.domains)) args.push(`\n${key}`, String(worker));
  const owners = new Set(Object.values(reserved.proxies));
  for (const owner of owners) {
    const scope = reserved.scopes?.[owner];
    if (scope === undefined) args.push(`\t${owner}`, "*");
    else for (const key of scope) args.push(`\t${owner}\n${key}`, "1");
  }
  for (const [owner, at] of Object.entries(reserved.from ?? {})) if (at > 0) args.push(`\r${owner}`, String(Math.floor(at)));
  await env.runner.run("reserve", keyv("reserveKeys", { reserved: keys.reserved }), args);
}
