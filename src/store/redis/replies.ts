/**
 * Decoding of script replies (flat arrays) into the store's result types.
 */
import type { AcquireResult, LostReasonName, ProxyStateName, ProxyView, ReleaseResult, RenewResult } from "@proxybroker/sdk/model";
import { lostReason, ScriptCode, ScriptReplyError } from "./errors.js";
import { decodeLabels } from "./labels.js";
import { encodeLeaseId } from "./lease-id.js";

/** Entries of a proxy in a reply after its id: url … quarantineCount, exitIp. */
export const VIEW_FIELDS = 13;

const STATES: Readonly<Record<string, ProxyStateName>> = {
  A: "ACTIVE",
  Q: "QUARANTINED",
  B: "BLACKLISTED",
  D: "DISABLED",
};

/** The reply as an array. */
export function asArray(reply: unknown): unknown[] {
  if (!Array.isArray(reply)) throw new ScriptReplyError(`expected an array reply, got ${typeof reply}`);
  return reply;
}

/** Entry `i` as a string ("" for nil). */
export function str(a: readonly unknown[], i: number): string {
  const v = a[i];
  if (v === null || v === undefined) return "";
  if (typeof v === "string") return v;
  if (typeof v === "number") return String(v);
  throw new ScriptReplyError(`reply entry ${i} is not a string`);
}

/** Entry `i` as a number (0 for nil). */
export function num(a: readonly unknown[], i: number): number {
  const v = a[i];
  if (v === null || v === undefined || v === "") return 0;
  if (typeof v === "number") return v;
  if (typeof v === "string") {
    const n = Number(v);
    if (Number.isFinite(n)) return n;
  }
  throw new ScriptReplyError(`reply entry ${i} is not a number: ${String(v)}`);
}

/** The proxy whose id is at `a[i]`, fields following. */
export function decodeProxy(a: readonly unknown[], i: number): ProxyView {
  const state = STATES[str(a, i + 5)];
  if (state === undefined) throw new ScriptReplyError(`unknown proxy state "${str(a, i + 5)}"`);
  return {
    id: str(a, i),
    url: str(a, i + 1),
    tier: str(a, i + 2),
    labels: decodeLabels(str(a, i + 3)),
    score: num(a, i + 4),
    state,
    latencyEwmaMs: num(a, i + 6),
    successCount: num(a, i + 7),
    failureCount: num(a, i + 8),
    lastUsedBy: str(a, i + 9),
    lastUsedAt: num(a, i + 10),
    quarantineUntil: num(a, i + 11),
    quarantineCount: num(a, i + 12),
    exitIp: str(a, i + 13),
  };
}

/** What an acquire reply needs besides itself to make a lease. */
export interface AcquireContext {
  readonly pool: string;
  readonly domainKey: string;
  readonly sessionKey: string;
  readonly hex: string;
}

/** Decode an acquire reply that starts at `a[i]`. */
export function decodeAcquire(a: readonly unknown[], i: number, ctx: AcquireContext): AcquireResult {
  const code = num(a, i);
  if (code === ScriptCode.StalePolicy) return { kind: "stale-policy", version: str(a, i + 1) };
  if (code === ScriptCode.NoProxyAvailable) return { kind: "denied", retryAfterMs: num(a, i + 1) };
  if (code !== ScriptCode.Ok) throw new ScriptReplyError(`unexpected acquire code ${code}`);
  const proxy = decodeProxy(a, i + 4);
  // a retried request gets its first lease back, named by that lease's hex
  const hex = str(a, i + 18) || ctx.hex;
  return {
    kind: "granted",
    lease: {
      leaseId: encodeLeaseId({ hex, pool: ctx.pool, domainKey: ctx.domainKey, proxyId: proxy.id }),
      fencingToken: num(a, i + 1),
      pool: ctx.pool,
      domainKey: ctx.domainKey,
      proxy,
      expireAt: num(a, i + 2),
      sessionKey: ctx.sessionKey,
      sessionRebound: num(a, i + 3) === 1,
      intervalMs: num(a, i + 19),
      ttlMs: num(a, i + 20),
    },
  };
}

function lostOf(code: number, what: string): LostReasonName {
  const reason = lostReason(code);
  if (reason === undefined) throw new ScriptReplyError(`unexpected ${what} code ${code}`);
  return reason;
}

/** Decode a renew reply. */
export function decodeRenew(reply: unknown): RenewResult {
  const a = asArray(reply);
  const code = num(a, 0);
  if (code === ScriptCode.Ok) return { kind: "renewed", expireAt: num(a, 1), ttlMs: num(a, 2) };
  return { kind: "lost", reason: lostOf(code, "renew") };
}

/** Decode a release reply; with `next`, the acquire reply follows the release code. */
export function decodeRelease(reply: unknown, next?: AcquireContext): ReleaseResult {
  const a = asArray(reply);
  const code = num(a, 0);
  const nextResult = next === undefined ? undefined : decodeAcquire(a, 1, next);
  if (code === ScriptCode.Ok) return nextResult === undefined ? { kind: "released" } : { kind: "released", next: nextResult };
  const reason = lostOf(code, "release");
  return nextResult === undefined ? { kind: "lost", reason } : { kind: "lost", reason, next: nextResult };
}
