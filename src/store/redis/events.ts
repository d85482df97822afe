/**
 * Internal to the Redis store: the pool's event stream `P evs` and the audit trail
 * `<prefix>:audit`, both capped Redis streams (MAXLEN ~ 10,000). Blocking reads (XREAD BLOCK)
 * run on connections of their own — a blocked connection runs nothing else — kept in a small pool;
 * when all are busy a read does not block and the caller polls.
 */
import { Cluster } from "ioredis";
import type { Redis } from "ioredis";
import type { AuditEntry, NewAuditEntry, NewPoolEvent, PoolEvent } from "@proxybroker/sdk/model";
import type { StoreEnv } from "./store-env.js";
import type { RedisClient } from "./scripts.js";
import { toStoreError } from "./errors.js";

const MAXLEN = 10_000;
/** Blocking connections kept at most. */
const MAX_BLOCKING = 16;

type Entry = [id: string, fields: string[]];

function fieldsOf(raw: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < raw.length; i += 2) out[raw[i]!] = raw[i + 1]!;
  return out;
}

function timeOf(id: string): number {
  return Number(id.slice(0, id.indexOf("-")));
}

function toEvent([id, raw]: Entry): PoolEvent {
  const f = fieldsOf(raw);
  return { id, at: timeOf(id), kind: f["k"] ?? "", proxyId: f["p"] ?? "", domainKey: f["d"] ?? "", detail: f["x"] ?? "" };
}

function toAudit([id, raw]: Entry): AuditEntry {
  const f = fieldsOf(raw);
  return { id, at: timeOf(id), actor: f["a"] ?? "", method: f["m"] ?? "", pool: f["p"] ?? "", detail: f["x"] ?? "" };
}

export async function appendEvent(env: StoreEnv, pool: string, e: NewPoolEvent): Promise<void> {
  const key = env.keys.pool(pool).events;
  await env.runner.call((c) => c.xadd(key, "MAXLEN", "~", MAXLEN, "*", "k", e.kind, "p", e.proxyId, "d", e.domainKey, "x", e.detail));
}

export async function appendAudit(env: StoreEnv, e: NewAuditEntry): Promise<void> {
  await env.runner.call((c) => c.xadd(env.keys.audit, "MAXLEN", "~", MAXLEN, "*", "a", e.actor, "m", e.method, "p", e.pool, "x", e.detail));
}

export async function listAudit(env: StoreEnv, limit: number): Promise<AuditEntry[]> {
  const rows = (await env.runner.call((c) => c.xrevrange(env.keys.audit, "+", "-", "COUNT", limit))) as Entry[];
  return rows.map(toAudit);
}

/** The id of the stream's last entry ("0-0" when empty). */
async function lastId(env: StoreEnv, key: string): Promise<string> {
  const rows = (await env.runner.call((c) => c.xrevrange(key, "+", "-", "COUNT", 1))) as Entry[];
  return rows[0]?.[0] ?? "0-0";
}

/** A small pool of connections for blocking reads of the event streams. */
export class BlockingReads {
  private readonly idle: RedisClient[] = [];
  private open = 0;
  private closed = false;

  constructor(private readonly client: RedisClient) {}

  /** Events of `pool` after the cursor `after` ("" oldest kept, "$" new only), waiting up to `blockMs`. */
  async readEvents(
    env: StoreEnv,
    pool: string,
    after: string,
    opts: { readonly count: number; readonly blockMs: number },
  ): Promise<{ events: PoolEvent[]; cursor: string }> {
    const key = env.keys.pool(pool).events;
    // "$" is made a real id first, so that the cursor handed back holds whatever came meanwhile
    const from = after === "" ? "0-0" : after === "$" ? await lastId(env, key) : after;
    const conn = opts.blockMs > 0 ? this.take() : undefined;
    try {
      const reply = (
        conn === undefined
          ? await env.runner.call((c) => c.xread("COUNT", opts.count, "STREAMS", key, from))
          : await conn.xread("COUNT", opts.count, "BLOCK", opts.blockMs, "STREAMS", key, from)
      ) as [string, Entry[]][] | null;
      const events = (reply?.[0]?.[1] ?? []).map(toEvent);
      return { events, cursor: events.at(-1)?.id ?? from };
    } catch (err) {
      throw toStoreError(err);
    } finally {
      if (conn !== undefined) this.give(conn);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const c of this.idle.splice(0)) c.disconnect();
  }

  private take(): RedisClient | undefined {
    const found = this.idle.pop();
    if (found !== undefined) return found;
    if (this.open >= MAX_BLOCKING || this.closed) return undefined;
    this.open++;
    // no command timeout: a blocked XREAD answers when its BLOCK runs out
    let c: RedisClient;
    if (this.client instanceof Cluster) {
      c = this.client.duplicate(undefined, { enableOfflineQueue: true, redisOptions: { maxRetriesPerRequest: 0, connectTimeout: 1_000 } });
    } else {
      const r: Redis = this.client.duplicate({ enableOfflineQueue: true, lazyConnect: true });
      delete (r.options as { commandTimeout?: number }).commandTimeout;
      c = r;
    }
    c.on("error", () => undefined);
    return c;
  }

  private give(conn: RedisClient): void {
    if (this.closed) {
      conn.disconnect();
      this.open--;
    } else {
      this.idle.push(conn);
    }
  }
}
